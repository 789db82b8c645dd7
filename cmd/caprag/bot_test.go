package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

func TestBotNeedsAToken(t *testing.T) {
	t.Setenv("DISCORD_TOKEN", "")
	var out, errOut bytes.Buffer
	code := run(context.Background(), []string{"bot"}, strings.NewReader(""), &out, &errOut)
	if code != 2 || !strings.Contains(errOut.String(), "DISCORD_TOKEN is not set") { // a missing setting: exit 2, as README says
		t.Fatalf("exit %d, stderr %q", code, errOut.String())
	}
	if code := run(context.Background(), []string{"bot", "extra"}, strings.NewReader(""), &out, &errOut); code != 2 {
		t.Fatalf("extra argument: exit %d", code)
	}
}
