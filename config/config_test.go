package config

import (
	"errors"
	"strings"
	"testing"
)

func TestLoadDefaults(t *testing.T) {
	unset(t, "RETRIEVAL_STRATEGY", "LLM_PROVIDER", "OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY", "DATA_DIR")
	c, err := Load()
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if c.RetrievalStrategy != "multi-hop" {
		t.Errorf("RetrievalStrategy = %q, want multi-hop", c.RetrievalStrategy)
	}
	if c.LLMProvider != "offline" || !c.LLMProviderDefaulted {
		t.Errorf("LLMProvider = %q (defaulted %v), want offline chosen by default", c.LLMProvider, c.LLMProviderDefaulted)
	}
	if c.MaxHops != 3 || c.VectorStore != "embedded" || c.EmbeddingsProvider != "local" {
		t.Errorf("defaults: MaxHops=%d VectorStore=%q EmbeddingsProvider=%q", c.MaxHops, c.VectorStore, c.EmbeddingsProvider)
	}
}

// LLM_CONTENTS_TOKENS reads "auto" (the default), 0 and numbers of tokens.
func TestContentsTokens(t *testing.T) {
	for v, want := range map[string]int{"": -1, "auto": -1, "AUTO": -1, "0": 0, "6000": 6000} {
		if n, err := (Config{LLMContentsTokens: v}).ContentsTokens(); err != nil || n != want {
			t.Errorf("LLM_CONTENTS_TOKENS=%q reads %d (%v), want %d", v, n, err, want)
		}
	}
	unset(t, "LLM_CONTENTS_TOKENS")
	if c, err := Load(); err != nil || c.LLMContentsTokens != "auto" {
		t.Errorf("default LLM_CONTENTS_TOKENS %q (%v), want auto", c.LLMContentsTokens, err)
	}
}

func TestLLMProviderFollowsKeys(t *testing.T) {
	unset(t, "LLM_PROVIDER", "OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY")
	t.Setenv("OPENAI_BASE_URL", "http://localhost:11434/v1")
	c, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	if c.LLMProvider != "openai" {
		t.Errorf("with OPENAI_BASE_URL set, LLMProvider = %q, want openai", c.LLMProvider)
	}
}

func TestInvalidSettingsNameVariableAndAcceptedValues(t *testing.T) {
	cases := []struct{ name, value, want string }{
		{"RETRIEVAL_STRATEGY", "single-pass", "multi-hop, multi-question"},
		{"VECTOR_STORE", "pinecone", "embedded, chroma"},
		{"SEARCH_MODE", "semantic", "hybrid, lexical, vector"},
		{"MAX_HOPS", "0", "from 1 to 10"},
		{"MAX_HOPS", "three", "whole number"},
		{"CACHE_TTL", "forever", "duration"},
		{"DISCORD_API_URL", "discord.com", "http"},
		{"ANSWER_TIMEOUT", "20m", "up to 14m"},
		{"MAX_FILE_MB", "0", "from 1 to 4096"},
		{"MAX_FILE_MB", "1GB", "whole number"},
		{"MAX_BOOK_TEXT_MB", "5000", "from 1 to 1024"},
		{"STORE_LOCK_TIMEOUT", "-1s", "0 (do not wait) or more"},
		{"STORE_LOCK_TIMEOUT", "soon", "duration"},
		{"LLM_CONTEXT_TOKENS", "100", "from 1024"},
		{"LLM_ANSWER_MAX_TOKENS", "0", "from 64"},
		{"LLM_JSON_MAX_TOKENS", "lots", "whole number"},
		{"LLM_CONTENTS_TOKENS", "some", "auto (a quarter"},
		{"LLM_CONTENTS_TOKENS", "-5", "0 (no table of contents)"},
		{"LLM_RETRIES", "20", "from 0 to 10"},
		{"LLM_RETRY_MAX_WAIT", "1h", "up to 10m"},
		{"LLM_MAX_CONNS", "0", "from 1"},
		{"ANTHROPIC_BASE_URL", "gateway.local", "http"},
		{"MAX_UPLOAD_MB", "0", "from 1 to 4096"},
		{"INGEST_JOBS", "0", "from 1 to 16"},
		{"RATE_LIMIT_USER", "-1", "from 0 to 1000"},
		{"RATE_LIMIT_SERVER", "many", "whole number"},
		{"ANSWER_RECORDS_MAX", "0", "from 1"},
		{"ANSWER_RECORDS_TTL", "0s", "positive duration"},
		{"THREADS_MAX", "0", "from 1"},
		{"THREADS_TTL", "week", "duration"},
		{"FEEDBACK_MAX", "0", "from 1"},
		{"BOOKS_REFRESH", "2h", "up to 1h0m0s"},
	}
	for _, tc := range cases {
		t.Run(tc.name+"="+tc.value, func(t *testing.T) {
			t.Setenv(tc.name, tc.value)
			_, err := Load()
			if err == nil {
				t.Fatalf("Load accepted %s=%q", tc.name, tc.value)
			}
			var ce *Error
			if !errors.As(err, &ce) {
				t.Fatalf("error %v is not a *config.Error", err)
			}
			if !strings.Contains(err.Error(), tc.name) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not name %s and %q", err, tc.name, tc.want)
			}
		})
	}
}

func TestRequireDiscord(t *testing.T) {
	if err := (Config{}).RequireDiscord(); !errors.Is(err, ErrNoDiscordToken) {
		t.Errorf("RequireDiscord without token = %v, want ErrNoDiscordToken", err)
	}
	if err := (Config{DiscordToken: "x"}).RequireDiscord(); err != nil {
		t.Errorf("RequireDiscord with token = %v", err)
	}
}
