package harness

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"sort"
	"sync"
	"time"
)

// Probe is the real traffic probe of issue 29: it sends GET URL at Rate requests per second
// (or, with Burst > 0, Burst concurrent requests every 1/Rate seconds) until Stop, and
// records every failure with its time. A failure is a transport error (refused, reset, EOF,
// timeout) or a status other than 2xx. Every request opens a new connection, so each one
// goes through the service proxy's choice of endpoint, as a fresh client's would.
type Probe struct {
	URL     string
	Rate    float64       // ticks per second; 0 means 3
	Burst   int           // requests per tick, sent at once; 0 means 1
	Timeout time.Duration // per request; 0 means 2 s

	mu      sync.Mutex
	results []probeResult
	cancel  context.CancelFunc
	done    sync.WaitGroup
	started time.Time
}

type probeResult struct {
	at  time.Time
	err error
}

// ProbeFailure is one failed request: when it was sent and why it failed.
type ProbeFailure struct {
	At  time.Time
	Err string
}

// ProbeReport is what a Probe saw between Start and Stop.
type ProbeReport struct {
	Sent, Failed int
	Failures     []ProbeFailure // in the order sent
	// LongestStreak is the most failures in a row (in the order sent), and StreakSpan the
	// time from the first to the last of them.
	LongestStreak int
	StreakSpan    time.Duration
	Duration      time.Duration
}

func (r ProbeReport) String() string {
	return fmt.Sprintf("sent %d, failed %d, longest failure streak %d over %s, in %s",
		r.Sent, r.Failed, r.LongestStreak, r.StreakSpan.Round(time.Millisecond), r.Duration.Round(time.Millisecond))
}

// Start begins sending; it returns at once.
func (p *Probe) Start() {
	rate, burst, timeout := p.Rate, p.Burst, p.Timeout
	if rate <= 0 {
		rate = 3
	}
	if burst <= 0 {
		burst = 1
	}
	if timeout <= 0 {
		timeout = 2 * time.Second
	}
	client := &http.Client{Timeout: timeout, Transport: &http.Transport{DisableKeepAlives: true, Proxy: nil}}
	// ctx ends the sending only: requests in flight at Stop run to their answer or timeout.
	ctx, cancel := context.WithCancel(context.Background())
	p.cancel = cancel
	p.started = time.Now()
	p.done.Add(1)
	go func() {
		defer p.done.Done()
		tick := time.NewTicker(time.Duration(float64(time.Second) / rate))
		defer tick.Stop()
		for {
			for i := 0; i < burst; i++ {
				p.done.Add(1)
				go func() {
					defer p.done.Done()
					p.send(client)
				}()
			}
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
}

func (p *Probe) send(client *http.Client) {
	at := time.Now()
	err := get(client, p.URL)
	p.mu.Lock()
	p.results = append(p.results, probeResult{at: at, err: err})
	p.mu.Unlock()
}

func get(client *http.Client, url string) error {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		return fmt.Errorf("reading the body: %w", err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fmt.Errorf("status %s", resp.Status)
	}
	return nil
}

// Stop ends the sending, waits for the requests in flight (each to its answer or its
// Timeout), and reports every request sent.
func (p *Probe) Stop() ProbeReport {
	p.cancel()
	p.done.Wait()
	p.mu.Lock()
	defer p.mu.Unlock()
	rs := append([]probeResult(nil), p.results...)
	sort.SliceStable(rs, func(i, j int) bool { return rs[i].at.Before(rs[j].at) })
	r := ProbeReport{Sent: len(rs), Duration: time.Since(p.started)}
	streak, first := 0, time.Time{}
	for _, x := range rs {
		if x.err == nil {
			streak = 0
			continue
		}
		r.Failed++
		r.Failures = append(r.Failures, ProbeFailure{At: x.at, Err: x.err.Error()})
		if streak == 0 {
			first = x.at
		}
		streak++
		if streak > r.LongestStreak {
			r.LongestStreak, r.StreakSpan = streak, x.at.Sub(first)
		}
	}
	return r
}
