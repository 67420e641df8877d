package study

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"

	"github.com/dbrig/dbrig/internal/workload"
)

// typeCheck walks a decoded TOML document beside the Go type it decodes
// into and reports every value of the wrong type, each with its key, in
// the same words as every other spec error (the TOML library stops at the
// first mismatch and names Go's types).
func typeCheck(v any, t reflect.Type, path string, add func(key, msg string)) {
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() == reflect.Interface || v == nil {
		return
	}
	switch t.Kind() {
	case reflect.Struct:
		m, ok := v.(map[string]any)
		if !ok {
			add(path, fmt.Sprintf("want a table, got %s", workload.Describe(v)))
			return
		}
		for i := range t.NumField() {
			f := t.Field(i)
			tag, _, _ := strings.Cut(f.Tag.Get("toml"), ",")
			if tag == "" || tag == "-" {
				continue
			}
			if sub, ok := m[tag]; ok {
				typeCheck(sub, f.Type, join(path, tag), add)
			}
		}
	case reflect.Map:
		m, ok := v.(map[string]any)
		if !ok {
			add(path, fmt.Sprintf("want a table, got %s", workload.Describe(v)))
			return
		}
		for k, sub := range m {
			typeCheck(sub, t.Elem(), join(path, k), add)
		}
	case reflect.Slice:
		switch list := v.(type) {
		case []any:
			for i, sub := range list {
				typeCheck(sub, t.Elem(), join(path, strconv.Itoa(i)), add)
			}
		case []map[string]any:
			for i, sub := range list {
				typeCheck(sub, t.Elem(), join(path, strconv.Itoa(i)), add)
			}
		default:
			add(path, fmt.Sprintf("want a list, got %s", workload.Describe(v)))
		}
	case reflect.String:
		if _, ok := v.(string); !ok {
			add(path, fmt.Sprintf("want a string, got %s", workload.Describe(v)))
		}
	case reflect.Int, reflect.Int64, reflect.Int32:
		if _, ok := v.(int64); !ok {
			add(path, fmt.Sprintf("want a whole number, got %s", workload.Describe(v)))
		}
	case reflect.Float64:
		switch v.(type) {
		case float64, int64:
		default:
			add(path, fmt.Sprintf("want a number, got %s", workload.Describe(v)))
		}
	case reflect.Bool:
		if _, ok := v.(bool); !ok {
			add(path, fmt.Sprintf("want true or false, got %s", workload.Describe(v)))
		}
	}
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}
