// Package fakediscord is a small fake of Discord for tests: a REST server and a WebSocket gateway
// (HELLO, IDENTIFY → READY, heartbeats, dispatched events) that real discordgo reaches through
// DISCORD_API_URL. Every REST request is validated against Discord's own OpenAPI description; a
// request that does not validate is reported to the test and answered with 400. Requests are
// recorded, and 429s can be injected.
package fakediscord

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"
	"github.com/gorilla/websocket"

	"github.com/caprag/caprag/internal/testenv"
)

// IDs the fake uses for its application, bot user and guild.
const (
	AppID   = "100000000000000001"
	BotID   = "100000000000000001"
	GuildID = "200000000000000002"
)

// Request is one recorded REST request.
type Request struct {
	Method string
	// Path is the path below the API base, such as "/webhooks/1/tok/messages/@original".
	Path  string
	Query string
	Body  []byte
	At    time.Time
	// Status is the status the fake answered.
	Status int
}

// JSON decodes the request body into v.
func (r Request) JSON(v any) error { return json.Unmarshal(r.Body, v) }

// Server is a running fake Discord.
type Server struct {
	tb     testing.TB
	srv    *httptest.Server
	router routers.Router

	mu         sync.Mutex
	requests   []Request
	fail429    map[string]int     // path prefix → remaining 429s to answer
	retryAfter map[string]float64 // path prefix → retry_after of its 429s, seconds
	nextID     int64
	messages   map[string]map[string]any // message id → message
	originals  map[string]string         // interaction token → original message id
	conns      []*gwConn
	identified chan Identify
	seq        int64
	files      map[string][]byte // attachment id → content, served under /attachments/
}

// Identify is what the client sent in its IDENTIFY.
type Identify struct {
	Token   string `json:"token"`
	Intents int    `json:"intents"`
}

type gwConn struct {
	mu sync.Mutex
	ws *websocket.Conn
}

var (
	specOnce   sync.Once
	specRouter routers.Router
	specErr    error
)

// SpecPath returns the path of Discord's OpenAPI description in the shared folder, or skips /
// fails the test when it is missing.
func SpecPath(tb testing.TB) string {
	tb.Helper()
	p := filepath.Join(testenv.SharedDir(tb), "discord-api-spec", "openapi.json")
	if _, err := os.Stat(p); err != nil {
		testenv.Missing(tb, "Discord's OpenAPI description at %s", p)
	}
	return p
}

func loadRouter(path string) (routers.Router, error) {
	specOnce.Do(func() {
		doc, err := openapi3.NewLoader().LoadFromFile(path)
		if err != nil {
			specErr = fmt.Errorf("fakediscord: load %s: %w", path, err)
			return
		}
		specRouter, specErr = gorillamux.NewRouter(doc)
	})
	return specRouter, specErr
}

// New starts a fake Discord; it stops when the test ends.
func New(tb testing.TB) *Server {
	tb.Helper()
	r, err := loadRouter(SpecPath(tb))
	if err != nil {
		tb.Fatal(err)
	}
	s := &Server{
		tb: tb, router: r, fail429: map[string]int{}, retryAfter: map[string]float64{}, nextID: 300000000000000000,
		messages: map[string]map[string]any{}, originals: map[string]string{},
		identified: make(chan Identify, 4), files: map[string][]byte{},
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/api/v9/", s.rest)
	mux.HandleFunc("/gateway", s.gateway)
	mux.HandleFunc("/gateway/", s.gateway)
	mux.HandleFunc("/attachments/", s.attachment)
	s.srv = httptest.NewServer(mux)
	tb.Cleanup(s.Close)
	return s
}

// APIURL is the value for DISCORD_API_URL.
func (s *Server) APIURL() string { return s.srv.URL + "/api/v9" }

// Close stops the server and its gateway connections.
func (s *Server) Close() {
	s.mu.Lock()
	conns := s.conns
	s.conns = nil
	s.mu.Unlock()
	for _, c := range conns {
		c.ws.Close()
	}
	s.srv.Close()
}

// Identified waits for the bot's IDENTIFY.
func (s *Server) Identified(ctx context.Context) (Identify, error) {
	select {
	case id := <-s.identified:
		return id, nil
	case <-ctx.Done():
		return Identify{}, ctx.Err()
	}
}

// Fail429 makes the next n requests whose method and path start with prefix ("PATCH /webhooks/")
// answer 429 with a retry_after of 50 ms.
func (s *Server) Fail429(prefix string, n int) { s.Fail429After(prefix, n, 0.05) }

// Fail429After is Fail429 with the retry_after in seconds.
func (s *Server) Fail429After(prefix string, n int, retryAfter float64) {
	s.mu.Lock()
	s.fail429[prefix] = n
	s.retryAfter[prefix] = retryAfter
	s.mu.Unlock()
}

// Requests returns the recorded requests.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// Message returns a copy of a message the bot created or edited, by id (nil when unknown).
func (s *Server) Message(id string) map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	m, ok := s.messages[id]
	if !ok {
		return nil
	}
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// Original returns the id of the interaction's original response message ("" before the
// deferral).
func (s *Server) Original(token string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.originals[token]
}

func (s *Server) id() string {
	s.nextID++
	return fmt.Sprint(s.nextID)
}

// NewID returns a fresh snowflake.
func (s *Server) NewID() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.id()
}

func (s *Server) rest(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	path := strings.TrimPrefix(r.URL.Path, "/api/v9")
	rec := Request{Method: r.Method, Path: path, Query: r.URL.RawQuery, Body: body, At: time.Now()}
	status, resp := s.handle(r, path, body)
	rec.Status = status
	s.mu.Lock()
	s.requests = append(s.requests, rec)
	s.mu.Unlock()
	if status == http.StatusTooManyRequests {
		// As Discord does: the bucket is exhausted until retry_after.
		ra, _ := resp.(map[string]any)["retry_after"].(float64)
		w.Header().Set("Retry-After", fmt.Sprint(int(ra+0.999)))
		w.Header().Set("X-RateLimit-Limit", "5")
		w.Header().Set("X-RateLimit-Remaining", "0")
		w.Header().Set("X-RateLimit-Reset-After", fmt.Sprintf("%.3f", ra))
		w.Header().Set("X-RateLimit-Scope", "user")
	}
	if resp == nil {
		w.WriteHeader(status)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(resp)
}

func (s *Server) validate(r *http.Request, path string, body []byte) error {
	u := "https://discord.com/api/v10" + path
	if r.URL.RawQuery != "" {
		u += "?" + r.URL.RawQuery
	}
	req, err := http.NewRequest(r.Method, u, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header = r.Header.Clone()
	route, params, err := s.router.FindRoute(req)
	if err != nil {
		return fmt.Errorf("no such route in Discord's API: %w", err)
	}
	in := &openapi3filter.RequestValidationInput{
		Request: req, PathParams: params, Route: route,
		Options: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc},
	}
	return openapi3filter.ValidateRequest(context.Background(), in)
}

func (s *Server) handle(r *http.Request, path string, body []byte) (int, any) {
	if err := s.validate(r, path, body); err != nil {
		s.tb.Errorf("fakediscord: %s %s does not validate against Discord's API: %s\nbody: %s", r.Method, path, err.Error(), body)
		return http.StatusBadRequest, map[string]any{"code": 50035, "message": "Invalid Form Body"}
	}
	if !strings.HasPrefix(r.Header.Get("Authorization"), "Bot ") && !strings.HasPrefix(path, "/webhooks/") && !strings.HasPrefix(path, "/interactions/") {
		return http.StatusUnauthorized, map[string]any{"code": 0, "message": "401: Unauthorized"}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	key := r.Method + " " + path
	for prefix, n := range s.fail429 {
		if n > 0 && strings.HasPrefix(key, prefix) {
			s.fail429[prefix] = n - 1
			return http.StatusTooManyRequests, map[string]any{"message": "You are being rate limited.", "retry_after": s.retryAfter[prefix], "global": false}
		}
	}
	seg := strings.Split(strings.Trim(path, "/"), "/")
	var in map[string]any
	if len(body) > 0 && body[0] == '{' {
		_ = json.Unmarshal(body, &in)
	}
	switch {
	case r.Method == "GET" && path == "/gateway":
		return 200, map[string]any{"url": "ws://" + r.Host + "/gateway"}
	case r.Method == "PUT" && seg[0] == "applications":
		var cmds []map[string]any
		_ = json.Unmarshal(body, &cmds)
		for _, c := range cmds {
			c["id"] = s.id()
			c["application_id"] = AppID
			c["version"] = s.id()
			// A request gives the permissions as a number, an answer as a string.
			if n, ok := c["default_member_permissions"].(float64); ok {
				c["default_member_permissions"] = fmt.Sprint(int64(n))
			} else {
				c["default_member_permissions"] = nil
			}
			if c["type"] == nil {
				c["type"] = 1
			}
		}
		return 200, cmds
	case r.Method == "POST" && seg[0] == "interactions":
		token := seg[2]
		if typ, _ := in["type"].(float64); typ == 4 || typ == 5 {
			id := s.id()
			s.originals[token] = id
			m := s.newMessage(id, "", in["data"])
			m["interaction_token"] = token
			s.messages[id] = m
		}
		return 204, nil
	case r.Method == "PATCH" && seg[0] == "webhooks" && len(seg) == 5:
		id := seg[4]
		if id == "@original" {
			id = s.originals[seg[2]]
		}
		m := s.messages[id]
		if m == nil {
			return 404, map[string]any{"code": 10008, "message": "Unknown Message"}
		}
		mergeMessage(m, in)
		return 200, m
	case r.Method == "POST" && seg[0] == "webhooks" && len(seg) == 3:
		id := s.id()
		m := s.newMessage(id, r.URL.Query().Get("thread_id"), in)
		s.messages[id] = m
		return 200, m
	case r.Method == "POST" && seg[0] == "channels" && len(seg) == 5 && seg[4] == "threads":
		// A thread started on a message has the message's id.
		th := map[string]any{"id": seg[3], "type": 11, "parent_id": seg[1], "guild_id": GuildID, "name": in["name"]}
		return 201, th
	case r.Method == "POST" && seg[0] == "channels" && len(seg) == 3 && seg[2] == "messages":
		id := s.id()
		m := s.newMessage(id, seg[1], in)
		s.messages[id] = m
		return 200, m
	case r.Method == "PATCH" && seg[0] == "channels" && len(seg) == 4:
		m := s.messages[seg[3]]
		if m == nil {
			return 404, map[string]any{"code": 10008, "message": "Unknown Message"}
		}
		mergeMessage(m, in)
		return 200, m
	}
	return 404, map[string]any{"code": 0, "message": "404: Not Found (fakediscord does not serve this)"}
}

func (s *Server) newMessage(id, channel string, data any) map[string]any {
	if channel == "" {
		channel = "400000000000000004"
	}
	m := map[string]any{
		"id": id, "channel_id": channel, "type": 0, "content": "",
		"author":    map[string]any{"id": BotID, "username": "caprag", "bot": true},
		"timestamp": time.Now().UTC().Format(time.RFC3339),
		"embeds":    []any{}, "components": []any{},
	}
	if d, ok := data.(map[string]any); ok {
		mergeMessage(m, d)
	}
	return m
}

func mergeMessage(m, in map[string]any) {
	for _, k := range []string{"content", "embeds", "components", "flags", "allowed_mentions"} {
		if v, ok := in[k]; ok {
			m[k] = v
		}
	}
}

// gateway serves the WebSocket gateway.
func (s *Server) gateway(w http.ResponseWriter, r *http.Request) {
	up := websocket.Upgrader{}
	ws, err := up.Upgrade(w, r, nil)
	if err != nil {
		return
	}
	c := &gwConn{ws: ws}
	s.mu.Lock()
	s.conns = append(s.conns, c)
	s.mu.Unlock()
	c.send(map[string]any{"op": 10, "d": map[string]any{"heartbeat_interval": 45000}})
	for {
		var p struct {
			Op int             `json:"op"`
			D  json.RawMessage `json:"d"`
		}
		if err := ws.ReadJSON(&p); err != nil {
			return
		}
		switch p.Op {
		case 1:
			c.send(map[string]any{"op": 11})
		case 2:
			var id Identify
			_ = json.Unmarshal(p.D, &id)
			c.send(map[string]any{"op": 0, "t": "READY", "s": s.nextSeq(), "d": map[string]any{
				"v": 10, "session_id": "fake-session", "resume_gateway_url": "ws://" + r.Host + "/gateway",
				"user":        map[string]any{"id": BotID, "username": "caprag", "discriminator": "0", "bot": true},
				"guilds":      []any{},
				"application": map[string]any{"id": AppID, "flags": 0},
			}})
			select {
			case s.identified <- id:
			default:
			}
		}
	}
}

func (s *Server) nextSeq() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq++
	return s.seq
}

func (c *gwConn) send(v any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	_ = c.ws.WriteJSON(v)
}

// Dispatch sends a gateway event (such as "INTERACTION_CREATE") to every connected client.
func (s *Server) Dispatch(event string, data any) {
	seq := s.nextSeq()
	s.mu.Lock()
	conns := append([]*gwConn(nil), s.conns...)
	s.mu.Unlock()
	for _, c := range conns {
		c.send(map[string]any{"op": 0, "t": event, "s": seq, "d": data})
	}
}

// Actor is who sends an interaction: a member of a guild with permissions, or a user in a
// direct message (Guild "").
type Actor struct {
	Guild string
	User  string
	// Permissions are the member's permissions in the channel (a bit set, as Discord sends
	// them).
	Permissions int64
}

// Member is the default actor of Interaction: a player without permissions in GuildID.
var Member = Actor{Guild: GuildID, User: "500000000000000005"}

// InteractionAs builds an INTERACTION_CREATE payload sent by actor: in its guild by a member
// with its permissions, or in a direct message by a user.
func (s *Server) InteractionAs(actor Actor, kind int, channelID string, data map[string]any, message map[string]any) (id, token string, payload map[string]any) {
	id, token, payload = s.Interaction(kind, channelID, data, message)
	user := map[string]any{"id": actor.User, "username": "player-" + actor.User, "discriminator": "0"}
	if actor.Guild == "" {
		delete(payload, "guild_id")
		delete(payload, "member")
		payload["user"] = user
		payload["context"] = 1
		return id, token, payload
	}
	payload["guild_id"] = actor.Guild
	payload["member"] = map[string]any{"user": user, "roles": []any{}, "permissions": fmt.Sprint(actor.Permissions)}
	return id, token, payload
}

// Attach stores a file as an uploaded attachment, served on loopback under /attachments/, and
// returns its attachment object (for an option's resolved data). size is what Discord states;
// -1 states the file's own size.
func (s *Server) Attach(filename string, data []byte, size int) map[string]any {
	id := s.NewID()
	s.mu.Lock()
	s.files[id] = data
	s.mu.Unlock()
	if size < 0 {
		size = len(data)
	}
	u := s.srv.URL + "/attachments/" + id + "/" + filename
	return map[string]any{"id": id, "filename": filename, "size": size, "url": u, "proxy_url": u, "content_type": "application/octet-stream"}
}

func (s *Server) attachment(w http.ResponseWriter, r *http.Request) {
	parts := strings.Split(strings.TrimPrefix(r.URL.Path, "/attachments/"), "/")
	s.mu.Lock()
	data, ok := s.files[parts[0]]
	s.mu.Unlock()
	if !ok {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	_, _ = w.Write(data)
}

// SubCommand builds the data of /name sub with options; attachments given as options of type
// 11 (an Option whose Value is an attachment object from Attach) go in the resolved data.
func SubCommand(name, sub string, opts ...Option) map[string]any {
	var os []any
	resolved := map[string]any{}
	for _, o := range opts {
		if att, ok := o.Value.(map[string]any); ok {
			resolved[att["id"].(string)] = att
			os = append(os, map[string]any{"name": o.Name, "type": 11, "value": att["id"]})
			continue
		}
		typ := 3
		if _, ok := o.Value.(bool); ok {
			typ = 5
		}
		os = append(os, map[string]any{"name": o.Name, "type": typ, "value": o.Value, "focused": o.Focused})
	}
	data := map[string]any{"id": "600000000000000007", "name": name, "type": 1, "options": []any{
		map[string]any{"name": sub, "type": 1, "options": os},
	}}
	if len(resolved) > 0 {
		data["resolved"] = map[string]any{"attachments": resolved}
	}
	return data
}

// Option is one option of a slash command interaction.
type Option struct {
	Name    string
	Value   any
	Focused bool
}

// Interaction builds an INTERACTION_CREATE payload. kind is 2 (command), 3 (component), 4
// (autocomplete) or 5 (modal submit); data is the interaction's data object.
func (s *Server) Interaction(kind int, channelID string, data map[string]any, message map[string]any) (id, token string, payload map[string]any) {
	id = s.NewID()
	token = "tok-" + id
	if channelID == "" {
		channelID = "400000000000000004"
	}
	payload = map[string]any{
		"id": id, "application_id": AppID, "type": kind, "token": token, "version": 1,
		"guild_id": GuildID, "channel_id": channelID, "data": data,
		"member":          map[string]any{"user": map[string]any{"id": "500000000000000005", "username": "player", "discriminator": "0"}, "roles": []any{}, "permissions": "0"},
		"app_permissions": "0", "locale": "en-US",
	}
	if message != nil {
		payload["message"] = message
	}
	return id, token, payload
}

// SlashCommand builds the data of a /name command with options.
func SlashCommand(name string, opts ...Option) map[string]any {
	var os []any
	for _, o := range opts {
		typ := 3
		switch o.Value.(type) {
		case bool:
			typ = 5
		}
		os = append(os, map[string]any{"name": o.Name, "type": typ, "value": o.Value, "focused": o.Focused})
	}
	return map[string]any{"id": "600000000000000006", "name": name, "type": 1, "options": os}
}

// Wait polls the recorded requests until cond holds for them, or fails the test after timeout.
func (s *Server) Wait(tb testing.TB, timeout time.Duration, what string, cond func([]Request) bool) []Request {
	tb.Helper()
	deadline := time.Now().Add(timeout)
	for {
		reqs := s.Requests()
		if cond(reqs) {
			return reqs
		}
		if time.Now().After(deadline) {
			for _, r := range reqs {
				tb.Logf("%s %s %d %s", r.Method, r.Path, r.Status, r.Body)
			}
			tb.Fatalf("fakediscord: timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// ForToken returns the requests that use an interaction token (callback, edits, follow-ups).
func ForToken(reqs []Request, token string) []Request {
	var out []Request
	for _, r := range reqs {
		if strings.Contains(r.Path, "/"+token+"/") || strings.HasSuffix(r.Path, "/"+token) {
			out = append(out, r)
		}
	}
	return out
}

// ModalSubmit builds the data of a modal submission with one text input.
func ModalSubmit(customID, inputID, value string) map[string]any {
	return map[string]any{"custom_id": customID, "components": []any{
		map[string]any{"type": 1, "components": []any{map[string]any{"type": 4, "custom_id": inputID, "value": value}}},
	}}
}
