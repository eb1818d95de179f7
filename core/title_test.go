package core

import "testing"

func TestTitle(t *testing.T) {
	for _, c := range []struct {
		in   string
		max  int
		want string
	}{
		{"", 80, ""},
		{"  \n\n  Make the heading bigger \nand the footer smaller", 80, "Make the heading bigger"},
		{"say hi\r\nsay bye", 80, "say hi"},
		{"abcde", 5, "abcde"},
		{"ééééé", 4, "ééé…"},
		{"a b c d e", 4, "a b…"},
	} {
		if got := Title(c.in, c.max); got != c.want {
			t.Errorf("Title(%q, %d) = %q, want %q", c.in, c.max, got, c.want)
		}
	}
}
