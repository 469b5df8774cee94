// Command ballast-loadapp is the known load of Ballast's real-node tests: it burns a set
// cpu rate (millicores of its own measured cpu time, so it catches up when the node is
// busy), holds a set amount of touched memory, and on request starts a child process that
// allocates until the kernel OOM-kills it (the container and its cgroup survive, as when a
// worker process of a real server dies). Never part of a product binary.
//
// With -http-addr it also serves HTTP, as the real traffic probe's target (issue 29):
// GET / answers 200 with the pod name (env HOSTNAME), GET /readyz answers 200 until SIGTERM.
// On SIGTERM it stops accepting, finishes the requests in flight, and exits, as a real
// server does in a rolling deploy.
//
// With -pressure-file-mib it also keeps rewriting a file of that size through the page cache
// (in -pressure-dir): with a memory limit below the file plus the held memory, every pass
// makes the kernel reclaim the container's own dirty page cache at its limit, so the
// container is stalled on memory for as long as it runs, and never OOM-killed (page cache
// is reclaimable). Once the limit holds the file, the rewrites hit cached pages and the
// stall stops. The start time is logged ("page-cache pressure started at <ms> ms").
//
//	ballast-loadapp -cpu-millis 200 -memory-mib 150 [-oom-child-after 5s] [-http-addr :8080]
//	    [-pressure-file-mib 96 -pressure-dir /scratch -pressure-after 8s]
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"time"
)

func main() {
	cpu := flag.Int("cpu-millis", 200, "cpu to burn, millicores")
	mem := flag.Int("memory-mib", 150, "memory to allocate and keep touched, MiB")
	oomAfter := flag.Duration("oom-child-after", 0, "start one child that allocates until OOM-killed after this long (0: never)")
	hog := flag.Bool("hog", false, "internal: allocate until killed (the OOM child)")
	httpAddr := flag.String("http-addr", "", "serve GET / and GET /readyz on this address (empty: no HTTP)")
	pressureMiB := flag.Int("pressure-file-mib", 0, "keep rewriting a file of this many MiB through the page cache (0: never)")
	pressureDir := flag.String("pressure-dir", os.TempDir(), "directory of the -pressure-file-mib file")
	pressureAfter := flag.Duration("pressure-after", 0, "start the -pressure-file-mib rewrites after this long")
	flag.Parse()
	if *hog {
		allocateForever()
	}
	held := touch(make([]byte, *mem<<20))
	fmt.Printf("loadapp: holding %d MiB, burning %dm cpu\n", *mem, *cpu)
	if *oomAfter > 0 {
		go oomChild(*oomAfter)
	}
	go burn(*cpu)
	if *pressureMiB > 0 {
		go func() {
			time.Sleep(*pressureAfter)
			rewrite(*pressureDir, *pressureMiB)
		}()
	}
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGINT, syscall.SIGTERM)
	var srv *http.Server
	if *httpAddr != "" {
		srv = serve(*httpAddr)
	}
	refresh := time.NewTicker(5 * time.Second)
	for {
		select {
		case sig := <-stop:
			if srv != nil {
				shutdown(srv, sig)
			}
			return
		case <-refresh.C:
			touch(held) // keep the pages resident and active
		}
	}
}

// touch writes one byte per page so the memory is really charged to the cgroup.
func touch(b []byte) []byte {
	for i := 0; i < len(b); i += 4096 {
		b[i]++
	}
	return b
}

// burn keeps this process's cpu time at millis/1000 of the wall time since start: every
// 10 ms tick it spins while it is behind, then sleeps.
func burn(millis int) {
	start, cpu0 := time.Now(), cpuTime()
	for range time.Tick(10 * time.Millisecond) {
		target := time.Duration(float64(time.Since(start)) * float64(millis) / 1000)
		for cpuTime()-cpu0 < target {
			for i := 0; i < 20000; i++ {
				_ = i * i
			}
		}
	}
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func oomChild(after time.Duration) {
	time.Sleep(after)
	cmd := exec.Command("/proc/self/exe", "-hog")
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	err := cmd.Run()
	fmt.Printf("loadapp: OOM child ended at %d ms: %v\n", time.Now().UnixMilli(), err)
}

// rewrite writes a file of mib MiB from its start, over and over, through the page cache,
// at most about 200 MiB/s (a pass takes at least mib × 5 ms), so that once the limit holds
// the file it does not spin a core. A write error ends the process (the pod fails visibly).
func rewrite(dir string, mib int) {
	f, err := os.CreateTemp(dir, "pressure-")
	if err != nil {
		fmt.Fprintf(os.Stderr, "loadapp: pressure file: %v\n", err)
		os.Exit(1)
	}
	buf := make([]byte, 1<<20)
	for i := range buf {
		buf[i] = byte(i)
	}
	fmt.Printf("loadapp: page-cache pressure started at %d ms: rewriting %d MiB in %s\n", time.Now().UnixMilli(), mib, f.Name())
	pace := time.Duration(mib) * 2 * time.Millisecond
	for pass := 1; ; pass++ {
		began := time.Now()
		for i := 0; i < mib; i++ {
			if _, err := f.WriteAt(buf, int64(i)<<20); err != nil {
				fmt.Fprintf(os.Stderr, "loadapp: pressure file: %v\n", err)
				os.Exit(1)
			}
		}
		if pass == 1 {
			fmt.Printf("loadapp: first pass written at %d ms\n", time.Now().UnixMilli())
		}
		time.Sleep(pace - time.Since(began))
	}
}

func allocateForever() {
	var chunks [][]byte
	for {
		chunks = append(chunks, touch(make([]byte, 8<<20)))
	}
}

// serve starts the HTTP server; a listen error ends the process (the pod fails visibly).
func serve(addr string) *http.Server {
	pod, _ := os.Hostname()
	if h := os.Getenv("HOSTNAME"); h != "" {
		pod = h
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintf(w, "loadapp %s\n", pod)
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintln(w, "ok")
	})
	srv := &http.Server{Addr: addr, Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		if err := srv.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
			fmt.Fprintf(os.Stderr, "loadapp: http: %v\n", err)
			os.Exit(1)
		}
	}()
	fmt.Printf("loadapp: serving HTTP on %s as %s\n", addr, pod)
	return srv
}

// shutdown stops accepting, waits for the requests in flight (at most 20 s), then returns.
func shutdown(srv *http.Server, sig os.Signal) {
	fmt.Printf("loadapp: %v at %d ms: draining HTTP\n", sig, time.Now().UnixMilli())
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		fmt.Printf("loadapp: shutdown: %v\n", err)
	}
	fmt.Printf("loadapp: drained at %d ms\n", time.Now().UnixMilli())
}
