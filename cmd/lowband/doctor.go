package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"
	"github.com/urfave/cli/v2"

	"github.com/lowband/lowband/configs"
	"github.com/lowband/lowband/node/doctor"
	"github.com/lowband/lowband/p2p"
)

func doctorCommand() *cli.Command {
	return &cli.Command{
		Name:      "doctor",
		Usage:     "check this node's setup, one line per check (OK, SKIP, WARN, FAIL and what to do); exit status 1 if any fails",
		UsageText: "lowband doctor [--home DIR] [--json]",
		Flags:     []cli.Flag{homeFlag, jsonFlag},
		Action: func(c *cli.Context) error {
			if c.NArg() > 0 {
				return fmt.Errorf("doctor takes no arguments (got %q)", c.Args().First())
			}
			h, err := home(c)
			if err != nil {
				return err
			}
			var pr doctor.Prober
			if p, err := p2p.NewProber(); err != nil {
				pr = brokenProber{err}
			} else {
				defer p.Close()
				pr = p
			}
			rs := doctor.Run(c.Context, doctor.Env{Home: h, Running: runningNode(h), Prober: pr})
			if c.Bool("json") {
				err = writeJSON(c.App.Writer, struct {
					Checks []doctor.Result `json:"checks"`
					Failed bool            `json:"failed"`
				}{rs, doctor.Failed(rs)})
			} else {
				err = doctor.Print(c.App.Writer, rs)
			}
			if err == nil && doctor.Failed(rs) {
				return exitCode(1)
			}
			return err
		},
	}
}

// runningNode asks the home's running node for its status and metrics.
func runningNode(h configs.Home) func(ctx context.Context) (*doctor.Running, error) {
	return func(ctx context.Context) (*doctor.Running, error) {
		addr, err := apiAddr(h)
		if errors.Is(err, errNotRunning) {
			return nil, errors.New("no api.addr in the home")
		} else if err != nil {
			return nil, err
		}
		r := &doctor.Running{APIAddr: addr}
		if err := apiGet(ctx, h, "/status", &r.Status); errors.Is(err, errNotRunning) {
			return nil, fmt.Errorf("api.addr names %s, but nothing answers there: the node stopped without removing it", addr)
		} else if err != nil {
			return nil, err
		}
		if m, err := apiRaw(ctx, h, "/metrics"); err == nil {
			r.Metrics = string(m)
		}
		return r, nil
	}
}

// brokenProber stands in when the probe host could not start: every probe fails with
// the reason.
type brokenProber struct{ err error }

func (b brokenProber) Probe(context.Context, peer.AddrInfo, protocol.ID) p2p.ProbeResult {
	return p2p.ProbeResult{Stage: p2p.StageDial, Err: b.err}
}

func (b brokenProber) Clock(context.Context, peer.AddrInfo, protocol.ID) p2p.ClockResult {
	return p2p.ClockResult{Err: b.err}
}
