// Package config holds every caprag setting. Settings are environment variables, read once with
// envconfig and validated at start-up; nothing else in caprag reads the environment.
package config

import (
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/kelseyhightower/envconfig"
)

// Accepted values of the enumerated settings.
var (
	Strategies          = []string{"multi-hop", "multi-question"}
	VectorStores        = []string{"embedded", "chroma"}
	EmbeddingsProviders = []string{"local", "openai", "ollama", "use-lite"}
	SearchModes         = []string{"auto", "hybrid", "lexical", "vector"}
	LLMProviders        = []string{"openai", "ollama", "anthropic", "offline"}
	LogLevels           = []string{"debug", "info", "warn", "error"}
	LogFormats          = []string{"text", "json"}
)

// Config is every setting. The envconfig tag names the variable; README.md documents each with
// its default.
type Config struct {
	// Books and search.
	DataDir            string `envconfig:"DATA_DIR" default:"data"`
	VectorStore        string `envconfig:"VECTOR_STORE" default:"embedded"`
	ChromaURL          string `envconfig:"CHROMA_URL" default:"http://localhost:8000"`
	ChromaCollection   string `envconfig:"CHROMA_COLLECTION" default:"caprag"`
	ChromaTenant       string `envconfig:"CHROMA_TENANT" default:"default_tenant"`
	ChromaDatabase     string `envconfig:"CHROMA_DATABASE" default:"default_database"`
	EmbeddingsProvider string `envconfig:"EMBEDDINGS_PROVIDER" default:"local"`
	// EmbeddingsModel is the embedding model; empty means the provider's default.
	EmbeddingsModel string `envconfig:"EMBEDDINGS_MODEL"`
	// EmbeddingsModelDir holds the USE-Lite model files; empty means DATA_DIR/models/use-lite.
	EmbeddingsModelDir string `envconfig:"EMBEDDINGS_MODEL_DIR"`
	TopK               int    `envconfig:"TOP_K" default:"5"`
	// SearchMode is the ranking: BM25 and vectors fused (hybrid), one of them alone, or auto
	// (lexical with the local hashed embedder, hybrid with the others).
	SearchMode string `envconfig:"SEARCH_MODE" default:"auto"`

	// Limits and locks.
	// MaxFileMB is the largest file ingest reads, in MiB.
	MaxFileMB int `envconfig:"MAX_FILE_MB" default:"256"`
	// MaxBookTextMB is the most text one book may hold, in MiB (ingest memory grows with it).
	MaxBookTextMB int `envconfig:"MAX_BOOK_TEXT_MB" default:"16"`
	// StoreLockTimeout is how long a change to the books waits for another process's change.
	StoreLockTimeout time.Duration `envconfig:"STORE_LOCK_TIMEOUT" default:"2m"`

	// Models.
	// LLMProvider is empty when unset: Load picks openai, anthropic or offline from the keys.
	LLMProvider     string        `envconfig:"LLM_PROVIDER"`
	LLMModel        string        `envconfig:"LLM_MODEL"`
	LLMTimeout      time.Duration `envconfig:"LLM_TIMEOUT" default:"60s"`
	OpenAIBaseURL   string        `envconfig:"OPENAI_BASE_URL"`
	OpenAIAPIKey    string        `envconfig:"OPENAI_API_KEY"`
	OllamaURL       string        `envconfig:"OLLAMA_URL" default:"http://localhost:11434"`
	AnthropicAPIKey string        `envconfig:"ANTHROPIC_API_KEY"`
	// AnthropicBaseURL is an Anthropic-compatible gateway or proxy; empty means Anthropic's API.
	AnthropicBaseURL string `envconfig:"ANTHROPIC_BASE_URL"`
	// LLMContextTokens is the model's context window the prompts are fitted into; 0 means the
	// provider's (read from the model for Ollama).
	LLMContextTokens int `envconfig:"LLM_CONTEXT_TOKENS" default:"0"`
	// Output limits, in tokens: the answer, and the JSON replies (expansion, analysis).
	LLMAnswerMaxTokens int `envconfig:"LLM_ANSWER_MAX_TOKENS" default:"1024"`
	LLMJSONMaxTokens   int `envconfig:"LLM_JSON_MAX_TOKENS" default:"512"`
	// LLMContentsTokens bounds the books' table of contents in the expander's and analyzer's
	// requests: "auto" (a quarter of the context window), 0 (none) or a number of tokens.
	LLMContentsTokens string `envconfig:"LLM_CONTENTS_TOKENS" default:"auto"`
	// Retries of a model or embedding request after a transient failure, the longest wait
	// between two attempts, and the connections kept open per host.
	LLMRetries      int           `envconfig:"LLM_RETRIES" default:"3"`
	LLMRetryMaxWait time.Duration `envconfig:"LLM_RETRY_MAX_WAIT" default:"20s"`
	LLMMaxConns     int           `envconfig:"LLM_MAX_CONNS" default:"64"`

	// Retrieval and answers.
	RetrievalStrategy string        `envconfig:"RETRIEVAL_STRATEGY" default:"multi-hop"`
	MaxHops           int           `envconfig:"MAX_HOPS" default:"3"`
	MaxQueries        int           `envconfig:"MAX_QUERIES" default:"4"`
	CacheTTL          time.Duration `envconfig:"CACHE_TTL" default:"1h"`
	CacheMaxEntries   int           `envconfig:"CACHE_MAX_ENTRIES" default:"1000"`

	// Discord.
	DiscordToken          string        `envconfig:"DISCORD_TOKEN"`
	DiscordGuildID        string        `envconfig:"DISCORD_GUILD_ID"`
	DiscordAPIURL         string        `envconfig:"DISCORD_API_URL" default:"https://discord.com/api/v9"`
	DiscordMessageContent bool          `envconfig:"DISCORD_MESSAGE_CONTENT" default:"false"`
	AnswerTimeout         time.Duration `envconfig:"ANSWER_TIMEOUT" default:"2m"`
	ShutdownTimeout       time.Duration `envconfig:"SHUTDOWN_TIMEOUT" default:"30s"`

	// Servers: books added from Discord, fair use, and the bot's memory across restarts.
	// MaxUploadMB is the largest book file /books add accepts, in MiB.
	MaxUploadMB int `envconfig:"MAX_UPLOAD_MB" default:"50"`
	// IngestJobs is how many books added from Discord are read at once, across all servers
	// (one per server at a time).
	IngestJobs int `envconfig:"INGEST_JOBS" default:"2"`
	// BooksRefresh is how often the bot looks for books another process (caprag ingest)
	// changed, per library, when a question reads it.
	BooksRefresh time.Duration `envconfig:"BOOKS_REFRESH" default:"5s"`
	// RateLimitUser and RateLimitServer are the questions per minute one player, and one
	// server, may ask (0: no limit).
	RateLimitUser   int `envconfig:"RATE_LIMIT_USER" default:"6"`
	RateLimitServer int `envconfig:"RATE_LIMIT_SERVER" default:"60"`
	// Answer records (behind the buttons), thread histories and feedback votes are kept in
	// DATA_DIR/state.db: at most so many, each for at most so long.
	AnswerRecordsMax int           `envconfig:"ANSWER_RECORDS_MAX" default:"20000"`
	AnswerRecordsTTL time.Duration `envconfig:"ANSWER_RECORDS_TTL" default:"720h"`
	ThreadsMax       int           `envconfig:"THREADS_MAX" default:"5000"`
	ThreadsTTL       time.Duration `envconfig:"THREADS_TTL" default:"168h"`
	FeedbackMax      int           `envconfig:"FEEDBACK_MAX" default:"100000"`

	// Logs.
	LogLevel  string `envconfig:"LOG_LEVEL" default:"info"`
	LogFormat string `envconfig:"LOG_FORMAT" default:"text"`

	// LLMProviderDefaulted is true when LLM_PROVIDER was unset and Load chose the provider.
	LLMProviderDefaulted bool `ignored:"true"`
}

// Error is a bad setting: it names the variable, the value and what is accepted.
type Error struct {
	Var      string
	Value    string
	Accepted string
}

func (e *Error) Error() string {
	if e.Value == "" {
		return fmt.Sprintf("%s is not set: accepted values are %s", e.Var, e.Accepted)
	}
	return fmt.Sprintf("%s=%q is not valid: accepted values are %s", e.Var, e.Value, e.Accepted)
}

// Load reads the settings from the environment and validates them. A bad setting returns an
// error that names the variable and the accepted values (errors.As finds the *Error, or several
// joined).
func Load() (Config, error) {
	var c Config
	if err := envconfig.Process("", &c); err != nil {
		return Config{}, fromEnvconfig(err)
	}
	c.applyDefaults()
	if err := c.Validate(); err != nil {
		return Config{}, err
	}
	return c, nil
}

// fromEnvconfig turns envconfig's parse error ("envconfig.Process: assigning MAX_HOPS to
// MaxHops: converting 'x' to type int…") into an *Error that says what is accepted.
func fromEnvconfig(err error) error {
	var pe *envconfig.ParseError
	if errors.As(err, &pe) {
		accepted := "a value of type " + pe.TypeName
		switch pe.TypeName {
		case "int":
			accepted = "a whole number"
		case "bool":
			accepted = "true or false"
		case "Duration", "time.Duration":
			accepted = `a duration such as "90s", "5m" or "1h"`
		}
		return &Error{Var: pe.KeyName, Value: pe.Value, Accepted: accepted}
	}
	return fmt.Errorf("config: %w", err)
}

func (c *Config) applyDefaults() {
	if c.LLMProvider == "" {
		c.LLMProviderDefaulted = true
		switch {
		case c.OpenAIAPIKey != "" || c.OpenAIBaseURL != "":
			c.LLMProvider = "openai"
		case c.AnthropicAPIKey != "":
			c.LLMProvider = "anthropic"
		default:
			c.LLMProvider = "offline"
		}
	}
	if c.EmbeddingsModelDir == "" {
		c.EmbeddingsModelDir = filepath.Join(c.DataDir, "models", "use-lite")
	}
	c.DiscordAPIURL = strings.TrimRight(c.DiscordAPIURL, "/")
}

// Validate checks every setting and returns all problems at once.
func (c Config) Validate() error {
	var errs []error
	oneOf := func(name, value string, accepted []string) {
		for _, a := range accepted {
			if value == a {
				return
			}
		}
		errs = append(errs, &Error{Var: name, Value: value, Accepted: strings.Join(accepted, ", ")})
	}
	between := func(name string, value, lo, hi int) {
		if value < lo || value > hi {
			errs = append(errs, &Error{Var: name, Value: fmt.Sprint(value), Accepted: fmt.Sprintf("whole numbers from %d to %d", lo, hi)})
		}
	}
	positive := func(name string, d time.Duration, max time.Duration) {
		if d <= 0 || (max > 0 && d > max) {
			acc := "a positive duration such as \"90s\""
			if max > 0 {
				acc = fmt.Sprintf("a positive duration up to %s", max)
			}
			errs = append(errs, &Error{Var: name, Value: d.String(), Accepted: acc})
		}
	}
	absURL := func(name, value string, optional bool) {
		if value == "" && optional {
			return
		}
		u, err := url.Parse(value)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			errs = append(errs, &Error{Var: name, Value: value, Accepted: "an http:// or https:// URL"})
		}
	}

	oneOf("RETRIEVAL_STRATEGY", c.RetrievalStrategy, Strategies)
	oneOf("VECTOR_STORE", c.VectorStore, VectorStores)
	oneOf("EMBEDDINGS_PROVIDER", c.EmbeddingsProvider, EmbeddingsProviders)
	oneOf("SEARCH_MODE", c.SearchMode, SearchModes)
	oneOf("LLM_PROVIDER", c.LLMProvider, LLMProviders)
	oneOf("LOG_LEVEL", c.LogLevel, LogLevels)
	oneOf("LOG_FORMAT", c.LogFormat, LogFormats)
	between("MAX_HOPS", c.MaxHops, 1, 10)
	between("MAX_QUERIES", c.MaxQueries, 1, 10)
	between("TOP_K", c.TopK, 1, 50)
	between("CACHE_MAX_ENTRIES", c.CacheMaxEntries, 0, 1_000_000)
	between("MAX_FILE_MB", c.MaxFileMB, 1, 4096)
	between("MAX_BOOK_TEXT_MB", c.MaxBookTextMB, 1, 1024)
	between("MAX_UPLOAD_MB", c.MaxUploadMB, 1, 4096)
	between("INGEST_JOBS", c.IngestJobs, 1, 16)
	between("RATE_LIMIT_USER", c.RateLimitUser, 0, 1000)
	between("RATE_LIMIT_SERVER", c.RateLimitServer, 0, 100_000)
	between("ANSWER_RECORDS_MAX", c.AnswerRecordsMax, 1, 10_000_000)
	between("THREADS_MAX", c.ThreadsMax, 1, 10_000_000)
	between("FEEDBACK_MAX", c.FeedbackMax, 1, 100_000_000)
	positive("ANSWER_RECORDS_TTL", c.AnswerRecordsTTL, 0)
	positive("THREADS_TTL", c.ThreadsTTL, 0)
	positive("BOOKS_REFRESH", c.BooksRefresh, time.Hour)
	if c.StoreLockTimeout < 0 {
		errs = append(errs, &Error{Var: "STORE_LOCK_TIMEOUT", Value: c.StoreLockTimeout.String(), Accepted: `a duration of 0 (do not wait) or more, such as "2m"`})
	}
	if c.LLMContextTokens != 0 {
		between("LLM_CONTEXT_TOKENS", c.LLMContextTokens, 1024, 2_000_000)
	}
	between("LLM_ANSWER_MAX_TOKENS", c.LLMAnswerMaxTokens, 64, 100_000)
	between("LLM_JSON_MAX_TOKENS", c.LLMJSONMaxTokens, 64, 100_000)
	if _, err := c.ContentsTokens(); err != nil {
		errs = append(errs, err)
	}
	between("LLM_RETRIES", c.LLMRetries, 0, 10)
	between("LLM_MAX_CONNS", c.LLMMaxConns, 1, 10_000)
	positive("LLM_RETRY_MAX_WAIT", c.LLMRetryMaxWait, 10*time.Minute)
	positive("CACHE_TTL", c.CacheTTL, 0)
	positive("LLM_TIMEOUT", c.LLMTimeout, 0)
	// An interaction token lives 15 minutes; the answer must land before it expires.
	positive("ANSWER_TIMEOUT", c.AnswerTimeout, 14*time.Minute)
	positive("SHUTDOWN_TIMEOUT", c.ShutdownTimeout, 0)
	absURL("CHROMA_URL", c.ChromaURL, false)
	absURL("OPENAI_BASE_URL", c.OpenAIBaseURL, true)
	absURL("OLLAMA_URL", c.OllamaURL, false)
	absURL("ANTHROPIC_BASE_URL", c.AnthropicBaseURL, true)
	absURL("DISCORD_API_URL", c.DiscordAPIURL, false)
	if c.DataDir == "" {
		errs = append(errs, &Error{Var: "DATA_DIR", Value: "", Accepted: "a folder path"})
	}
	if c.ChromaCollection == "" {
		errs = append(errs, &Error{Var: "CHROMA_COLLECTION", Value: "", Accepted: "a collection name"})
	}
	return errors.Join(errs...)
}

// ErrNoDiscordToken is returned by RequireDiscord when DISCORD_TOKEN is empty: a bad setting
// (exit status 2), like every *Error.
var ErrNoDiscordToken = &Error{Var: "DISCORD_TOKEN", Value: "", Accepted: "the token of a bot created in the Discord developer portal (see README, \"Running the bot\")"}

// ContentsTokens is LLM_CONTENTS_TOKENS as a number of tokens, -1 for auto; a setting that is
// neither is an *Error.
func (c Config) ContentsTokens() (int, error) {
	v := strings.TrimSpace(c.LLMContentsTokens)
	if v == "" || strings.EqualFold(v, "auto") {
		return -1, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 || n > 2_000_000 {
		return 0, &Error{Var: "LLM_CONTENTS_TOKENS", Value: c.LLMContentsTokens, Accepted: "auto (a quarter of the model's context window), 0 (no table of contents) or whole numbers up to 2000000"}
	}
	return n, nil
}

// RequireDiscord checks the settings only the bot needs.
func (c Config) RequireDiscord() error {
	if strings.TrimSpace(c.DiscordToken) == "" {
		return ErrNoDiscordToken
	}
	return nil
}

// RequireModel checks the settings a language model needs: the key (or, for OpenAI-compatible
// servers, the base URL) of the chosen provider. The offline models need none.
func (c Config) RequireModel() error {
	switch c.LLMProvider {
	case "openai":
		if c.OpenAIAPIKey == "" && c.OpenAIBaseURL == "" {
			return &Error{Var: "OPENAI_API_KEY", Value: "", Accepted: "an OpenAI API key with LLM_PROVIDER=openai (or OPENAI_BASE_URL for a local OpenAI-compatible server such as Ollama, vLLM or LM Studio)"}
		}
	case "anthropic":
		if c.AnthropicAPIKey == "" {
			return &Error{Var: "ANTHROPIC_API_KEY", Value: "", Accepted: "an Anthropic API key with LLM_PROVIDER=anthropic"}
		}
	}
	return nil
}
