package understudy

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
)

// counter sums the samples of a Prometheus counter family on ballast-control's metrics
// endpoint whose labels include every want pair (text exposition, read line by line).
func counter(c context.Context, name string, want map[string]string) (float64, error) {
	req, err := http.NewRequestWithContext(c, http.MethodGet, sb.MetricsURL, nil)
	if err != nil {
		return 0, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("%s: %s", sb.MetricsURL, resp.Status)
	}
	total := 0.0
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, name+"{") {
			continue
		}
		end := strings.LastIndex(line, "}")
		labels, value := line[len(name)+1:end], strings.TrimSpace(line[end+1:])
		ok := true
		for k, v := range want {
			ok = ok && strings.Contains(labels, k+"="+strconv.Quote(v))
		}
		if !ok {
			continue
		}
		f, err := strconv.ParseFloat(value, 64)
		if err != nil {
			return 0, fmt.Errorf("%s: %w", line, err)
		}
		total += f
	}
	return total, sc.Err()
}
