package engine

import (
	"strings"
	"testing"
)

func TestRedactURI(t *testing.T) {
	tests := []struct{ in, want string }{
		{"postgres://app:s3cret@db.example:5432/shop?sslmode=disable", "postgres://app:xxxxx@db.example:5432/shop?sslmode=disable"},
		{"postgres://app@db/shop", "postgres://app@db/shop"},
		{"postgresql://db/shop?password=s3cret&user=app", "postgresql://db/shop?password=xxxxx&user=app"},
		{"host=db user=app password=s3cret dbname=shop", "host=db user=app password=xxxxx dbname=shop"},
		{"host=db password = 'se cr\\'et' dbname=shop", "host=db password = xxxxx dbname=shop"},
		{"mysql://root:pw@tcp(127.0.0.1:3306)/x", "mysql://root:xxxxx@tcp(127.0.0.1:3306)/x"},
	}
	for _, tt := range tests {
		got := RedactURI(tt.in)
		if got != tt.want {
			t.Errorf("RedactURI(%q) = %q, want %q", tt.in, got, tt.want)
		}
		if strings.Contains(got, "s3cret") || strings.Contains(got, "pw@") {
			t.Errorf("RedactURI(%q) leaks the password: %q", tt.in, got)
		}
	}
}
