package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/lowband/lowband/configs"
)

// homeFlag is --home, shared by every command that works on a home directory.
var homeFlag = &cli.StringFlag{
	Name:  "home",
	Usage: "home directory (default $" + configs.HomeEnv + ", else ~/.lowband)",
}

func home(c *cli.Context) (configs.Home, error) { return configs.ResolveHome(c.String("home")) }

// loadHome resolves the home directory and reads its config and network spec.
func loadHome(c *cli.Context) (configs.Home, *configs.Config, *configs.Spec, error) {
	h, err := home(c)
	if err != nil {
		return h, nil, nil, err
	}
	cfg, spec, err := h.Load()
	return h, cfg, spec, err
}

// errNotRunning says that no node serves the home's API.
var errNotRunning = errors.New("no node is running")

// apiGet fetches path from the running node's local API and decodes the JSON body into v.
func apiGet(ctx context.Context, h configs.Home, path string, v any) error {
	body, err := apiRaw(ctx, h, path)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(body, v); err != nil {
		return fmt.Errorf("GET %s: decoding the answer: %w", path, err)
	}
	return nil
}

// apiAddr reads the running node's API address from the home's api.addr.
func apiAddr(h configs.Home) (string, error) {
	raw, err := os.ReadFile(h.APIAddrPath())
	if errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("%w in %s (no api.addr; start one with: lowband run --home %s)", errNotRunning, h.Dir, h.Dir)
	} else if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(raw)), nil
}

// apiRaw fetches path from the running node's local API and returns the body.
func apiRaw(ctx context.Context, h configs.Home, path string) ([]byte, error) {
	addr, err := apiAddr(h)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+path, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%w in %s: the API at %s does not answer (%v)", errNotRunning, h.Dir, addr, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s: %s", path, resp.Status, strings.TrimSpace(string(body)))
	}
	return body, nil
}
