package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// gpuSampler follows the GPU's used memory through one `nvidia-smi -lms`
// process and keeps its peak. Without nvidia-smi it samples nothing and
// its peak is -1.
type gpuSampler struct {
	cmd  *exec.Cmd
	mu   sync.Mutex
	peak int64 // MiB; -1 when unknown
	done chan struct{}
}

// nvidiaSMI is the nvidia-smi program ("" when there is none).
func nvidiaSMI() string {
	p, err := exec.LookPath("nvidia-smi")
	if err != nil {
		return ""
	}
	return p
}

// gpuUsedMiB reads the used memory of the first GPU once (-1: unknown).
func gpuUsedMiB() int64 {
	smi := nvidiaSMI()
	if smi == "" {
		return -1
	}
	out, err := exec.Command(smi, "--query-gpu=memory.used", "--format=csv,noheader,nounits", "-i", "0").Output()
	if err != nil {
		return -1
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(out)), 10, 64)
	if err != nil {
		return -1
	}
	return n
}

// startGPUSampler starts sampling every 100 ms.
func startGPUSampler() *gpuSampler {
	s := &gpuSampler{peak: -1, done: make(chan struct{})}
	smi := nvidiaSMI()
	if smi == "" {
		close(s.done)
		return s
	}
	s.cmd = exec.Command(smi, "--query-gpu=memory.used", "--format=csv,noheader,nounits", "-i", "0", "-lms", "100")
	out, err := s.cmd.StdoutPipe()
	if err != nil || s.cmd.Start() != nil {
		s.cmd = nil
		close(s.done)
		return s
	}
	go func() {
		defer close(s.done)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if n, err := strconv.ParseInt(strings.TrimSpace(sc.Text()), 10, 64); err == nil {
				s.mu.Lock()
				s.peak = max(s.peak, n)
				s.mu.Unlock()
			}
		}
	}()
	return s
}

// stop ends the sampling and returns the peak used MiB (-1: unknown),
// read once more at the end so a short run still has a value.
func (s *gpuSampler) stop() int64 {
	last := gpuUsedMiB()
	if s.cmd != nil {
		_ = s.cmd.Process.Kill()
		<-s.done
		_ = s.cmd.Wait()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return max(s.peak, last)
}

// watchResult is what `gpu-check watch` records.
type watchResult struct {
	Command []string `json:"command"`
	RC      int      `json:"rc"`
	Seconds float64  `json:"seconds"`
	// BaselineGPUMiB is the GPU memory in use before the command started,
	// PeakGPUMiB the most seen while it ran (-1: no nvidia-smi).
	BaselineGPUMiB int64 `json:"baseline_gpu_mib"`
	PeakGPUMiB     int64 `json:"peak_gpu_mib"`
	// PeakRSSBytes is the command's peak resident memory.
	PeakRSSBytes int64 `json:"peak_rss_bytes"`
}

func runWatch(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("watch", flag.ContinueOnError)
	out := fs.String("out", "", "JSON file to write")
	if err := fs.Parse(args); err != nil {
		return err
	}
	argv := fs.Args()
	if *out == "" || len(argv) == 0 {
		return errors.New("want -out FILE -- CMD ARGS...")
	}
	res := watchResult{Command: argv, BaselineGPUMiB: gpuUsedMiB()}
	s := startGPUSampler()
	start := time.Now()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	runErr := cmd.Run()
	res.Seconds = time.Since(start).Seconds()
	res.PeakGPUMiB = s.stop()
	if cmd.ProcessState != nil {
		res.RC = cmd.ProcessState.ExitCode()
		if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
			res.PeakRSSBytes = ru.Maxrss * 1024
		}
	} else {
		res.RC = -1
	}
	if err := writeJSONFile(*out, res); err != nil {
		return err
	}
	if runErr != nil {
		return fmt.Errorf("%s: %w", argv[0], runErr)
	}
	return nil
}

// selfPeakRSS is this process's peak resident memory in bytes.
func selfPeakRSS() int64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return ru.Maxrss * 1024
}
