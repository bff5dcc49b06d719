package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentryhq/agentry/internal/loadgen"
)

func newLoadtestCmd() *cobra.Command {
	var (
		cfg     loadgen.Config
		mode    string
		jsonOut bool
	)
	cmd := &cobra.Command{
		Use:   "loadtest",
		Short: "Load-test POST /agents/{id}/runs on a local AgentOS server",
		Long: `Drives --concurrency clients against POST {url}/agents/{agent}/runs (stream=false,
or SSE with --stream) for --duration or --requests, after --warmup, and prints
runs/s, latency p50/p90/p99/max and, for streams, time to the first event.

Only loopback targets (127.0.0.0/8, ::1, localhost) are accepted unless
--allow-remote is given: load tests run next to the server they measure and must
not hit other hosts. Exits with status 3 when any request failed.`,
		Example: `  agentry serve --config examples/offline.yaml &
  agentry loadtest --url http://127.0.0.1:7777 --agent echo --concurrency 32 --duration 10s
  agentry loadtest --agent echo --stream --requests 20000 --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var err error
			if cfg.SessionMode, err = loadgen.ParseSessionMode(mode); err != nil {
				return err
			}
			// --requests alone means "this many", not "this many or 10s".
			if cmd.Flags().Changed("requests") && !cmd.Flags().Changed("duration") {
				cfg.Duration = 0
			}
			rep, err := loadgen.Run(cmd.Context(), cfg)
			if err != nil && !errors.Is(err, cmd.Context().Err()) {
				return err
			}
			// Interrupted runs still print what they measured.
			out := cmd.OutOrStdout()
			if jsonOut {
				enc := json.NewEncoder(out)
				enc.SetIndent("", "  ")
				if werr := enc.Encode(rep); werr != nil {
					return werr
				}
			} else if _, werr := fmt.Fprint(out, rep); werr != nil {
				return werr
			}
			if err != nil {
				return &exitError{code: 130, err: fmt.Errorf("load test interrupted: %w", err)}
			}
			if n := rep.Failures.Total(); n > 0 {
				return &exitError{code: 3, err: fmt.Errorf("%d of %d requests failed (%s)", n, rep.Requests, rep.Failures)}
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&cfg.BaseURL, "url", "http://127.0.0.1:7777", "server root URL (loopback only unless --allow-remote)")
	f.StringVar(&cfg.AgentID, "agent", "", "agent id to run (required)")
	f.IntVarP(&cfg.Concurrency, "concurrency", "c", loadgen.DefaultConcurrency, "concurrent clients, each with one request in flight")
	f.DurationVarP(&cfg.Duration, "duration", "d", loadgen.DefaultDuration, "measured phase length (max 30m)")
	f.IntVarP(&cfg.Requests, "requests", "n", 0, "stop after this many requests (with --duration: whichever comes first)")
	f.DurationVar(&cfg.Warmup, "warmup", time.Second, "unmeasured load before the measured phase")
	f.BoolVar(&cfg.Stream, "stream", false, "request SSE (stream=true) and measure time to first event")
	f.StringVar(&cfg.Message, "message", loadgen.DefaultMessage, "message form field")
	f.StringVar(&mode, "session-mode", string(loadgen.SessionNew), `"new" (a new session per run) or "per-worker" (one growing session per client)`)
	f.StringVar(&cfg.BearerToken, "token", "", "bearer token (security key or JWT)")
	f.DurationVar(&cfg.RequestTimeout, "timeout", loadgen.DefaultRequestTimeout, "per-request timeout")
	f.BoolVar(&cfg.AllowRemote, "allow-remote", false, "allow a non-loopback --url (only for hosts you own)")
	f.BoolVar(&jsonOut, "json", false, "print the report as JSON")
	_ = cmd.MarkFlagRequired("agent")
	return cmd
}
