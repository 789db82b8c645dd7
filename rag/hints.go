package rag

import (
	"cmp"
	"strconv"
	"strings"

	"github.com/caprag/caprag/words"
)

// Hint is an unresolved reference of a passage in the context: its target is not yet there.
type Hint struct {
	From Document
	Ref  Reference
	Rank int // position of From in the context (0 = found first)
}

// Unresolved returns the references of the documents whose targets are not among the
// documents' own sections (or pages), in context order, each target once. A reference that
// names the passage it resolves to (ID) is unresolved while that passage is not in the context.
func Unresolved(docs []Document) []Hint {
	have, exact, ids := map[string]bool{}, map[string]bool{}, map[string]bool{}
	for _, d := range docs {
		ids[d.ID] = true
		for _, h := range strings.Split(d.Section, " > ") {
			have[words.Fold(h)] = true
			exact[words.Normalize(h)] = true
		}
		if d.Page > 0 {
			have["page\x00"+d.Book+"\x00"+strconv.Itoa(d.Page)] = true
		}
	}
	var out []Hint
	seen := map[string]bool{}
	for i, d := range docs {
		for _, r := range d.Refs {
			k := words.Fold(r.Target)
			in := have
			if r.Kind == RefSee || r.Kind == RefMention && words.HasParticiple(r.Target) {
				// An explicit reference names its section exactly: "grappled (see ...)" in
				// Grappling points at Grappled, which folding would confuse with Grappling. So
				// does a mention of a state ("poisoned"), which Sample Poisons does not resolve.
				k, in = words.Normalize(r.Target), exact
			}
			if r.Kind == RefPage {
				k = "page\x00" + cmp.Or(r.Book, d.Book) + "\x00" + strings.TrimLeft(r.Target, "ABCDEFGHIJKLMNOPQRSTUVWXYZ")
			}
			if r.ID != "" {
				// The library resolved it: it is wanted until that passage is in the context.
				if ids[r.ID] || seen["\x00"+r.ID] {
					continue
				}
				seen["\x00"+r.ID] = true
				out = append(out, Hint{From: d, Ref: r, Rank: i})
				continue
			}
			if k == "" || in[k] || seen[k] || coveredByPrefix(in, k) {
				continue
			}
			seen[k] = true
			out = append(out, Hint{From: d, Ref: r, Rank: i})
		}
	}
	return out
}

// coveredByPrefix: "appendix ph a" is covered by a section "appendix ph a conditions".
func coveredByPrefix(have map[string]bool, k string) bool {
	if len(k) < 6 {
		return false
	}
	for h := range have {
		if strings.HasPrefix(h, k+" ") {
			return true
		}
	}
	return false
}
