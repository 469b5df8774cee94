package backfill

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
)

// Parsing of the Prometheus HTTP API's query_range answer, kept apart from the transport so
// it can be fuzzed (FuzzParseRange). The shape is
//
//	{"status":"success","data":{"resultType":"matrix","result":[
//	  {"metric":{"namespace":"a","pod":"b","container":"c"},"values":[[1700000000,"0.25"],...]}]}}
//
// and {"status":"error","errorType":"...","error":"..."} on failure.

// Point is one sample of a range series.
type Point struct {
	// UnixMilli is the sample time.
	UnixMilli int64
	Value     float64
}

// Series is one series of a range answer.
type Series struct {
	Labels map[string]string
	Points []Point
}

// ErrGarbage marks an answer that is not a Prometheus range answer at all.
var ErrGarbage = errors.New("not a Prometheus query_range answer")

// APIError is an answer with status "error".
type APIError struct{ Type, Message string }

func (e *APIError) Error() string {
	return fmt.Sprintf("prometheus answered %s: %s", e.Type, e.Message)
}

type rangeAnswer struct {
	Status    string `json:"status"`
	ErrorType string `json:"errorType"`
	Error     string `json:"error"`
	Data      *struct {
		ResultType string `json:"resultType"`
		Result     []struct {
			Metric map[string]string `json:"metric"`
			Values []rawPoint        `json:"values"`
		} `json:"result"`
	} `json:"data"`
}

// ParseRange decodes a query_range answer. Samples that are not finite non-negative numbers
// (NaN, ±Inf, negative, unparsable) are skipped and counted in skipped; a malformed answer
// is an error wrapping ErrGarbage, an error answer an *APIError.
func ParseRange(r io.Reader) (out []Series, skipped int, err error) {
	var a rangeAnswer
	if err := json.NewDecoder(r).Decode(&a); err != nil {
		return nil, 0, fmt.Errorf("%w: %v", ErrGarbage, err)
	}
	switch {
	case a.Status == "error":
		return nil, 0, &APIError{Type: a.ErrorType, Message: a.Error}
	case a.Status != "success":
		return nil, 0, fmt.Errorf("%w: status %q", ErrGarbage, a.Status)
	case a.Data == nil:
		return nil, 0, fmt.Errorf("%w: no data", ErrGarbage)
	case a.Data.ResultType != "matrix":
		return nil, 0, fmt.Errorf("%w: result type %q, want matrix", ErrGarbage, a.Data.ResultType)
	}
	out = make([]Series, 0, len(a.Data.Result))
	for _, res := range a.Data.Result {
		s := Series{Labels: res.Metric, Points: make([]Point, 0, len(res.Values))}
		for _, v := range res.Values {
			if !v.ok {
				skipped++
				continue
			}
			s.Points = append(s.Points, v.p)
		}
		out = append(out, s)
	}
	return out, skipped, nil
}

// rawPoint is one [unix seconds (number), "value" (string)] pair. It decodes itself
// without reflection (a day of 1,000 pods is 1.4 million of them per query); a pair that is
// not of that shape, or whose value is not a finite non-negative number, decodes with ok
// false and is skipped, while malformed JSON still fails the whole answer.
type rawPoint struct {
	p  Point
	ok bool
}

func (r *rawPoint) UnmarshalJSON(b []byte) error {
	*r = rawPoint{}
	b = bytes.TrimSpace(b)
	if len(b) < 2 || b[0] != '[' || b[len(b)-1] != ']' {
		if !json.Valid(b) {
			return fmt.Errorf("%w: bad sample %q", ErrGarbage, b)
		}
		return nil // valid JSON of another shape: skipped
	}
	inner := b[1 : len(b)-1]
	comma := bytes.IndexByte(inner, ',')
	if comma < 0 {
		return nil
	}
	tsText, valText := bytes.TrimSpace(inner[:comma]), bytes.TrimSpace(inner[comma+1:])
	ts, err := strconv.ParseFloat(string(tsText), 64)
	if err != nil || math.IsNaN(ts) || ts < 0 || ts > 1e11 {
		return nil
	}
	if len(valText) < 2 || valText[0] != '"' || valText[len(valText)-1] != '"' {
		return nil
	}
	str := valText[1 : len(valText)-1]
	if bytes.ContainsAny(str, `"\`) {
		return nil
	}
	val, err := strconv.ParseFloat(string(str), 64)
	if err != nil || math.IsNaN(val) || math.IsInf(val, 0) || val < 0 {
		return nil
	}
	r.p, r.ok = Point{UnixMilli: int64(math.Round(ts * 1000)), Value: val}, true
	return nil
}
