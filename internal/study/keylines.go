package study

import (
	"strconv"
	"strings"
)

// keyLines maps dotted key paths of a TOML document to the line (1-based)
// where each key is written, so that a spec error can say "file:line: key".
// Array-of-tables elements are numbered from 0 ("instance.1.settings").
// Keys inside an inline table get the line of the key that holds the table.
//
// BurntSushi/toml records these positions but does not export them; this
// scanner covers what a study file uses: table headers, array-of-tables,
// dotted and quoted keys, inline tables and multi-line arrays.
func keyLines(src string) map[string]int {
	lines := map[string]int{}
	arrayCount := map[string]int{}
	var table []string
	inString := "" // the delimiter of a multi-line string being skipped
	depth := 0     // open brackets/braces of a value that spans lines

	for i, raw := range strings.Split(src, "\n") {
		n := i + 1
		line := strings.TrimSpace(raw)
		if inString != "" {
			if strings.Contains(line, inString) {
				inString = ""
			}
			continue
		}
		if depth > 0 {
			depth += bracketBalance(line)
			continue
		}
		if line == "" || line[0] == '#' {
			continue
		}
		if strings.HasPrefix(line, "[[") {
			name := strings.TrimSpace(strings.TrimSuffix(stripComment(line[2:]), "]]"))
			path := splitKey(name)
			base := strings.Join(path, ".")
			idx := arrayCount[base]
			arrayCount[base] = idx + 1
			table = append(path, strconv.Itoa(idx))
			setLine(lines, path, n)
			setLine(lines, table, n)
			continue
		}
		if line[0] == '[' {
			name := strings.TrimSpace(strings.TrimSuffix(stripComment(line[1:]), "]"))
			table = resolveArrays(splitKey(name), arrayCount)
			setLine(lines, table, n)
			continue
		}
		eq := keyValueSplit(line)
		if eq < 0 {
			continue
		}
		key := splitKey(strings.TrimSpace(line[:eq]))
		full := append(append([]string{}, table...), key...)
		setLine(lines, full, n)
		value := strings.TrimSpace(line[eq+1:])
		for _, q := range []string{`"""`, `'''`} {
			if strings.HasPrefix(value, q) && !strings.Contains(value[3:], q) {
				inString = q
			}
		}
		if inString == "" {
			if strings.HasPrefix(value, "{") {
				inlineKeys(lines, full, value, n)
			}
			depth = bracketBalance(stripComment(value))
		}
	}
	return lines
}

// resolveArrays turns a sub-table header of an array of tables
// ("scale.quick.when" after [[scale.quick.when]]) into the path of the
// element it belongs to.
func resolveArrays(path []string, arrayCount map[string]int) []string {
	var out []string
	for i, p := range path {
		out = append(out, p)
		if c, ok := arrayCount[strings.Join(path[:i+1], ".")]; ok && i < len(path)-1 {
			out = append(out, strconv.Itoa(c-1))
		}
	}
	return out
}

func setLine(lines map[string]int, path []string, n int) {
	k := strings.Join(path, ".")
	if _, ok := lines[k]; !ok {
		lines[k] = n
	}
}

// inlineKeys records the keys of an inline table value, nested ones too.
func inlineKeys(lines map[string]int, prefix []string, value string, n int) {
	var stack [][]string
	cur := prefix
	token := strings.Builder{}
	inQuote := byte(0)
	for i := 0; i < len(value); i++ {
		c := value[i]
		if inQuote != 0 {
			if c == inQuote {
				inQuote = 0
			}
			if c == '\\' && inQuote == '"' {
				i++
			}
			token.WriteByte(c)
			continue
		}
		switch c {
		case '"', '\'':
			inQuote = c
			token.WriteByte(c)
		case '{':
			stack = append(stack, cur)
			token.Reset()
		case '}':
			if len(stack) > 0 {
				cur = stack[len(stack)-1]
				stack = stack[:len(stack)-1]
			}
			token.Reset()
		case ',':
			token.Reset()
		case '=':
			key := splitKey(strings.TrimSpace(token.String()))
			full := append(append([]string{}, stackTop(stack, prefix)...), key...)
			setLine(lines, full, n)
			cur = full
			token.Reset()
		case '[':
			// Skip arrays inside inline tables.
			d := 1
			for i++; i < len(value) && d > 0; i++ {
				switch value[i] {
				case '[':
					d++
				case ']':
					d--
				}
			}
			i--
		default:
			token.WriteByte(c)
		}
	}
}

func stackTop(stack [][]string, def []string) []string {
	if len(stack) == 0 {
		return def
	}
	return stack[len(stack)-1]
}

// keyValueSplit returns the index of the '=' that separates a key from its
// value, ignoring '=' inside quoted keys; -1 when the line is no key/value.
func keyValueSplit(line string) int {
	i := indexOutsideQuotes(line, "=#")
	if i < 0 || line[i] == '#' {
		return -1
	}
	return i
}

// indexOutsideQuotes returns the index of the first byte of chars that
// stands outside a quoted string, or -1.
func indexOutsideQuotes(s, chars string) int {
	inQuote := byte(0)
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case inQuote != 0:
			if c == inQuote {
				inQuote = 0
			}
		case c == '"' || c == '\'':
			inQuote = c
		case strings.IndexByte(chars, c) >= 0:
			return i
		}
	}
	return -1
}

// splitKey splits a dotted key, honouring quotes ("a.\"b.c\"" -> a, b.c).
func splitKey(k string) []string {
	var parts []string
	var cur strings.Builder
	inQuote := byte(0)
	for i := 0; i < len(k); i++ {
		c := k[i]
		switch {
		case inQuote != 0:
			if c == inQuote {
				inQuote = 0
			} else {
				cur.WriteByte(c)
			}
		case c == '"' || c == '\'':
			inQuote = c
		case c == '.':
			parts = append(parts, strings.TrimSpace(cur.String()))
			cur.Reset()
		default:
			cur.WriteByte(c)
		}
	}
	return append(parts, strings.TrimSpace(cur.String()))
}

// bracketBalance counts opening minus closing brackets and braces outside
// strings and comments.
func bracketBalance(s string) int {
	d := 0
	inQuote := byte(0)
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case inQuote != 0:
			if c == '\\' && inQuote == '"' {
				i++
			} else if c == inQuote {
				inQuote = 0
			}
		case c == '"' || c == '\'':
			inQuote = c
		case c == '#':
			return d
		case c == '[' || c == '{':
			d++
		case c == ']' || c == '}':
			d--
		}
	}
	return d
}

func stripComment(s string) string {
	if i := indexOutsideQuotes(s, "#"); i >= 0 {
		return strings.TrimSpace(s[:i])
	}
	return s
}

// lineOf finds the line of a key path, falling back to its nearest parent.
func lineOf(lines map[string]int, path string) int {
	for p := path; p != ""; {
		if n, ok := lines[p]; ok {
			return n
		}
		i := strings.LastIndexByte(p, '.')
		if i < 0 {
			break
		}
		p = p[:i]
	}
	return 0
}

// elementPaths lists, in file order, the paths of a key with the index of
// each array-of-tables element on its way ("scale.full.when.3.foo"), so
// that an error names the element, and keyLines its line.
func elementPaths(doc map[string]any, key []string) []string {
	var out []string
	var walk func(v any, rest []string, prefix string)
	walk = func(v any, rest []string, prefix string) {
		if elems, ok := v.([]map[string]any); ok {
			for i, e := range elems {
				walk(e, rest, join(prefix, strconv.Itoa(i)))
			}
			return
		}
		if len(rest) == 0 {
			out = append(out, prefix)
			return
		}
		if m, ok := v.(map[string]any); ok {
			if sub, ok := m[rest[0]]; ok {
				walk(sub, rest[1:], join(prefix, rest[0]))
			}
		}
	}
	walk(doc, key, "")
	return out
}
