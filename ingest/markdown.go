package ingest

import (
	"regexp"
	"strings"
)

// section is a run of text under one heading path (or one PDF page of one section).
type section struct {
	path string // heading path joined with " > "
	page int    // PDF page (printed number when shown), 0 otherwise
	text string
}

var atxHeading = regexp.MustCompile(`^(#{1,6})\s+(.*?)\s*#*\s*$`)

// markdownSections splits Markdown into sections at every ATX heading; each section's path is
// the chain of its ancestor headings. Headings inside fenced code blocks are text.
func markdownSections(src string) []section {
	src = strings.ReplaceAll(src, "\r\n", "\n")
	var (
		out    []section
		stack  []string // heading per level 1..6 (index level-1)
		buf    strings.Builder
		fenced bool
	)
	path := func() string {
		var parts []string
		for _, h := range stack {
			if h != "" {
				parts = append(parts, h)
			}
		}
		return strings.Join(parts, " > ")
	}
	flush := func() {
		if t := strings.TrimSpace(buf.String()); t != "" {
			out = append(out, section{path: path(), text: t})
		}
		buf.Reset()
	}
	for _, line := range strings.Split(src, "\n") {
		trimmed := strings.TrimSpace(line)
		if strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~") {
			fenced = !fenced
		}
		if !fenced {
			if m := atxHeading.FindStringSubmatch(line); m != nil {
				flush()
				level := len(m[1])
				title := cleanInline(m[2])
				for len(stack) < level {
					stack = append(stack, "")
				}
				stack = stack[:level]
				stack[level-1] = title
				continue
			}
		}
		buf.WriteString(line)
		buf.WriteByte('\n')
	}
	flush()
	return out
}

var inlineMarks = strings.NewReplacer("**", "", "__", "", "*", "", "`", "")

func cleanInline(s string) string { return strings.TrimSpace(inlineMarks.Replace(s)) }

// textSections treats a plain-text file as one untitled section; chunking splits it by paragraphs.
func textSections(src string) []section {
	src = strings.TrimSpace(strings.ReplaceAll(src, "\r\n", "\n"))
	if src == "" {
		return nil
	}
	return []section{{text: src}}
}
