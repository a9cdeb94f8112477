package glob

import "testing"

func lit(s string) Token { return Token{Kind: Literal, Text: s} }

var (
	star = Token{Kind: Star}
	one  = Token{Kind: AnyChar}
)

func TestMatch(t *testing.T) {
	digit := Token{Kind: Class, Ranges: []Range{{'0', '9'}}}
	notDigit := Token{Kind: Class, Negated: true, Ranges: []Range{{'0', '9'}}}
	for _, c := range []struct {
		toks   []Token
		s      string
		byRune bool
		want   bool
	}{
		{nil, "", false, true},
		{nil, "a", false, false},
		{[]Token{lit("abc")}, "abc", false, true},
		{[]Token{lit("abc")}, "abcd", false, false},
		{[]Token{star}, "", false, true},
		{[]Token{star, lit(".csv")}, "a.csv", false, true},
		{[]Token{star, lit(".csv")}, "a.csv.x", false, false},
		{[]Token{star, lit("b"), star, lit("d")}, "abcbd", true, true},
		{[]Token{lit("a"), one, lit("c")}, "aéc", true, true},
		{[]Token{lit("a"), one, lit("c")}, "aéc", false, true},
		{[]Token{one, one}, "é", false, false},
		{[]Token{digit, notDigit}, "7x", false, true},
		{[]Token{digit, notDigit}, "77", false, false},
		// A star moving on by bytes (as path.Match) lets "?" take the
		// bytes of one character apart; by characters it cannot.
		{[]Token{star, one, one, one}, "𝄞", false, true},
		{[]Token{star, one, one, one}, "𝄞", true, false},
		// Stars and literals backtrack without blowing up.
		{[]Token{star, lit("a"), star, lit("a"), star, lit("a"), star, lit("b")}, "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", true, false},
	} {
		if got := Match(c.toks, c.s, c.byRune); got != c.want {
			t.Errorf("Match(%v, %q, byRune %v) = %v, want %v", c.toks, c.s, c.byRune, got, c.want)
		}
	}
	if Wild([]Token{lit("a")}) || !Wild([]Token{lit("a"), star}) {
		t.Error("Wild")
	}
}
