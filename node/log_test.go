package node

import (
	"bytes"
	"strings"
	"testing"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/lowband/lowband/configs"
)

func TestLoggerPrintsPeerIDsInFull(t *testing.T) {
	_, pub, err := crypto.GenerateEd25519Key(nil)
	if err != nil {
		t.Fatal(err)
	}
	id, err := peer.IDFromPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	for _, format := range []string{"text", "json"} {
		var out bytes.Buffer
		log := NewLogger(&out, configs.LogConfig{Format: format, Level: "info"})
		log.With("self", id).Info("connected", "peer", id, "peers", []peer.ID{id})
		line := out.String()
		if strings.Count(line, id.String()) != 3 || strings.Contains(line, "<peer.ID") {
			t.Errorf("%s: want the full ID %s three times:\n%s", format, id, line)
		}
	}
}
