package views

import "strings"

// ShortName is a demangled C++ (or Rust) function name without its parameter list, what
// follows it (const, ref-qualifiers, [clone .cold]), its template arguments and its return
// type: ns::Class<T>::method(int) const becomes ns::Class::method, and
// void f<int>(int) becomes f. Operators keep their symbols (operator<, operator()), and
// (anonymous namespace) and lambda names ({lambda(int)#1}) stay as they are. A name with
// neither parentheses nor angle brackets (C, most JIT names) is returned unchanged.
func ShortName(s string) string {
	if !strings.ContainsAny(s, "<(") {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	cut := -1 // where the last top-level parameter list was
	for i := 0; i < len(s); {
		switch c := s[i]; {
		case c == 'o' && isOperator(s, i):
			b.WriteString("operator")
			i += len("operator")
			i += copyOperatorSymbol(&b, s, i)
		case c == '(' && strings.HasPrefix(s[i:], "(anonymous namespace)"):
			b.WriteString("(anonymous namespace)")
			i += len("(anonymous namespace)")
		case c == '(':
			cut = b.Len()
			i = skipGroup(s, i, '(', ')')
		case c == '<':
			i = skipGroup(s, i, '<', '>')
		case c == '{':
			end := skipGroup(s, i, '{', '}')
			b.WriteString(s[i:end])
			i = end
		default:
			b.WriteByte(c)
			i++
		}
	}
	out := b.String()
	if cut >= 0 {
		out = out[:cut]
	}
	// A return type ends at the last space outside an operator's name (operator new,
	// operator unsigned long) and outside (anonymous namespace) or a lambda.
	end := len(out)
	if o := lastOperator(out); o >= 0 {
		end = o
	}
	if sp := lastTopLevelSpace(out[:end]); sp >= 0 {
		out = out[sp+1:]
	}
	out = strings.TrimSpace(out)
	if out == "" {
		return s
	}
	return out
}

// isOperator says whether the keyword operator starts at s[i], as a name of its own.
func isOperator(s string, i int) bool {
	if !strings.HasPrefix(s[i:], "operator") {
		return false
	}
	if i > 0 && isIdent(s[i-1]) {
		return false
	}
	j := i + len("operator")
	return j == len(s) || !isIdent(s[j])
}

func isIdent(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c >= 0x80
}

// copyOperatorSymbol copies the symbol of an operator (<, <<=, (), [], ->*, ...) that
// follows the keyword at s[i], and returns its length; a named operator (new, delete, a
// conversion) is left to the caller.
func copyOperatorSymbol(b *strings.Builder, s string, i int) int {
	for _, sym := range []string{"()", "[]"} {
		if strings.HasPrefix(s[i:], sym) {
			b.WriteString(sym)
			return len(sym)
		}
	}
	j := i
	for j < len(s) && strings.IndexByte("<>=!+-*/%^&|~,", s[j]) >= 0 {
		j++
	}
	b.WriteString(s[i:j])
	return j - i
}

// skipGroup returns the index just past the group that opens at s[i] with open, nesting
// included; an unclosed group runs to the end. Inside angle brackets, parentheses nest on
// their own (a template argument can be a function type or an expression with >).
func skipGroup(s string, i int, open, close byte) int {
	depth := 0
	for j := i; j < len(s); j++ {
		switch s[j] {
		case open:
			depth++
		case close:
			depth--
			if depth == 0 {
				return j + 1
			}
		case '(':
			if open != '(' {
				j = skipGroup(s, j, '(', ')') - 1
			}
		}
	}
	return len(s)
}

// lastOperator is the index of the last operator keyword in s, -1 if none.
func lastOperator(s string) int {
	for i := len(s) - len("operator"); i >= 0; i-- {
		if isOperator(s, i) {
			return i
		}
	}
	return -1
}

// lastTopLevelSpace is the index of the last space in s outside parentheses and braces.
func lastTopLevelSpace(s string) int {
	depth := 0
	last := -1
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '(', '{':
			depth++
		case ')', '}':
			depth--
		case ' ':
			if depth == 0 {
				last = i
			}
		}
	}
	return last
}
