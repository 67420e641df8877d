package script

import (
	"strings"
)

// item is one piece of a script as the scanner cuts it: an SQL command
// (up to its semicolon, or to a meta command that follows it) or a meta
// command (a backslash word and its arguments, to the end of the line).
type item struct {
	line int
	meta bool
	// SQL: the text as written (from its first character that is not a
	// space or a comment), its pieces around the :variables, the variables'
	// names, and whether \; joined several statements into it.
	text     string
	pieces   []string
	varNames []string
	compound bool
	// Meta: the command's name (without the backslash) and the rest of the
	// line, continuations joined.
	name string
	args string
}

// scanner cuts a script the way pgbench's (psql's) lexer does: quotes,
// dollar quotes, comments and parentheses hide semicolons and backslashes;
// \; and \: put a literal ; or : into the command.
type scanner struct {
	src string
	pos int
	// line is the line at pos.
	line int
	// mariadb: a backslash escapes the next character in '...' and "..."
	// (MariaDB's default) and backquotes quote names; else a backslash
	// escapes only in E'...' and $tag$ quotes (PostgreSQL).
	mariadb bool
	items   []item

	cur      strings.Builder // the SQL command being collected
	piece    strings.Builder // its text since the last variable
	pieces   []string
	vars     []string
	start    int // line of the command's first character
	depth    int // parentheses
	compound bool
}

func scan(src string, mariadb bool) []item {
	s := &scanner{src: src, line: 1, mariadb: mariadb}
	for s.pos < len(s.src) {
		s.step()
	}
	s.flush()
	return s.items
}

func (s *scanner) peekAt(i int) byte {
	if s.pos+i < len(s.src) {
		return s.src[s.pos+i]
	}
	return 0
}

// emit adds src[s.pos:s.pos+n] to the command.
func (s *scanner) emit(n int) {
	if s.cur.Len() == 0 {
		k := 0
		for k < n && strings.IndexByte(" \t\r\n\f\v", s.src[s.pos+k]) >= 0 {
			k++
		}
		s.advance(k)
		if n -= k; n == 0 {
			return
		}
		s.start = s.line
	}
	text := s.src[s.pos : s.pos+n]
	s.cur.WriteString(text)
	s.piece.WriteString(text)
	s.advance(n)
}

func (s *scanner) advance(n int) {
	s.line += strings.Count(s.src[s.pos:s.pos+n], "\n")
	s.pos += n
}

// step consumes one token of SQL.
func (s *scanner) step() {
	c := s.src[s.pos]
	switch {
	case c == '-' && s.peekAt(1) == '-':
		end := strings.IndexByte(s.src[s.pos:], '\n')
		if end < 0 {
			end = len(s.src) - s.pos
		}
		if s.cur.Len() == 0 { // a comment before a command is not part of it
			s.advance(end)
			return
		}
		s.emit(end)
	case c == '/' && s.peekAt(1) == '*':
		s.emit(s.blockComment())
	case c == '\'':
		escapes := s.mariadb || s.pos > 0 && (s.src[s.pos-1] == 'E' || s.src[s.pos-1] == 'e') && (s.pos < 2 || !isIdent(s.src[s.pos-2]))
		s.emit(s.quoted('\'', escapes))
	case c == '"':
		s.emit(s.quoted('"', s.mariadb))
	case c == '`' && s.mariadb:
		s.emit(s.quoted('`', false))
	case c == '$' && !s.mariadb && s.dollarTag() != "":
		s.emit(s.dollarQuoted())
	case c == '(':
		s.depth++
		s.emit(1)
	case c == ')':
		s.depth = max(s.depth-1, 0)
		s.emit(1)
	case c == ';' && s.depth == 0:
		s.emit(1)
		s.flush()
	case c == '\\':
		s.backslash()
	case c == ':':
		s.colon()
	default:
		n := 1
		for s.pos+n < len(s.src) && !strings.ContainsRune("-/'\"`$();\\:", rune(s.src[s.pos+n])) {
			n++
		}
		s.emit(n)
	}
}

func isIdent(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c >= 0x80
}

func isVarStart(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' || c >= 0x80
}

// colon reads :name as a variable, as pgbench's parseVariable does; a run
// of colons that names nothing (a :: cast) is text.
func (s *scanner) colon() {
	if !isVarStart(s.peekAt(1)) {
		n := 1
		for s.peekAt(n) == ':' {
			n++
		}
		s.emit(n)
		return
	}
	n := 2
	for s.pos+n < len(s.src) && isIdent(s.src[s.pos+n]) {
		n++
	}
	if s.cur.Len() == 0 {
		s.start = s.line
	}
	s.cur.WriteString(s.src[s.pos : s.pos+n])
	s.pieces = append(s.pieces, s.piece.String())
	s.piece.Reset()
	s.vars = append(s.vars, s.src[s.pos+1:s.pos+n])
	s.advance(n)
}

// blockComment is the length of a /* */ comment (nested, as PostgreSQL's).
func (s *scanner) blockComment() int {
	depth := 0
	for i := s.pos; i+1 < len(s.src); i++ {
		switch {
		case s.src[i] == '/' && s.src[i+1] == '*':
			depth++
			i++
		case s.src[i] == '*' && s.src[i+1] == '/':
			depth--
			i++
			if depth == 0 || s.mariadb {
				return i + 1 - s.pos
			}
		}
	}
	return len(s.src) - s.pos
}

// quoted is the length of a quoted string or identifier, doubled quotes
// and (when escapes) backslashes included.
func (s *scanner) quoted(q byte, escapes bool) int {
	for i := s.pos + 1; i < len(s.src); i++ {
		switch s.src[i] {
		case '\\':
			if escapes {
				i++
			}
		case q:
			if i+1 < len(s.src) && s.src[i+1] == q {
				i++
				continue
			}
			return i + 1 - s.pos
		}
	}
	return len(s.src) - s.pos
}

// dollarTag is the $tag$ that starts at pos, or "".
func (s *scanner) dollarTag() string {
	if s.pos > 0 && isIdent(s.src[s.pos-1]) {
		return "" // $ inside an identifier
	}
	i := s.pos + 1
	if i < len(s.src) && s.src[i] >= '0' && s.src[i] <= '9' {
		return "" // a parameter, $1
	}
	for i < len(s.src) && isIdent(s.src[i]) {
		i++
	}
	if i < len(s.src) && s.src[i] == '$' {
		return s.src[s.pos : i+1]
	}
	return ""
}

func (s *scanner) dollarQuoted() int {
	tag := s.dollarTag()
	end := strings.Index(s.src[s.pos+len(tag):], tag)
	if end < 0 {
		return len(s.src) - s.pos
	}
	return len(tag) + end + len(tag)
}

// backslash handles \; and \: inside a command, or starts a meta command,
// which ends the SQL command before it.
func (s *scanner) backslash() {
	switch s.peekAt(1) {
	case ';':
		s.compound = true
		s.advance(1)
		s.emit(1)
		return
	case ':':
		s.advance(1)
		s.emit(1)
		return
	}
	s.flush()
	line := s.line
	s.advance(1)
	name, args := cutSpace(s.metaLine())
	s.items = append(s.items, item{line: line, meta: true, name: name, args: args})
}

// metaLine consumes a meta command's line, a backslash before the newline
// continuing it, and returns it with continuations as spaces.
func (s *scanner) metaLine() string {
	var b strings.Builder
	for s.pos < len(s.src) {
		c := s.src[s.pos]
		if c == '\\' && s.peekAt(1) == '\n' {
			b.WriteByte(' ')
			s.advance(2)
			continue
		}
		if c == '\\' && s.peekAt(1) == '\r' && s.peekAt(2) == '\n' {
			b.WriteByte(' ')
			s.advance(3)
			continue
		}
		s.advance(1)
		if c == '\n' {
			break
		}
		b.WriteByte(c)
	}
	return strings.TrimRight(b.String(), "\r")
}

// flush ends the SQL command collected so far, if any.
func (s *scanner) flush() {
	if strings.TrimSpace(s.cur.String()) != "" {
		s.items = append(s.items, item{line: s.start, text: strings.TrimRight(s.cur.String(), " \t\r\n"),
			pieces: append(s.pieces, strings.TrimRight(s.piece.String(), " \t\r\n")), varNames: s.vars, compound: s.compound})
	}
	s.cur.Reset()
	s.piece.Reset()
	s.pieces, s.vars, s.depth, s.compound = nil, nil, 0, false
}
