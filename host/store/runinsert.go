package store

import (
	"fmt"
	"reflect"
	"regexp"
	"strings"

	"github.com/jmoiron/sqlx/reflectx"
)

// insertRunQuery is insertRun with ? for each :name, and insertRunFields
// the runRow field each ? takes, in order. They are worked out once:
// sqlx.Named parsed the query again at every run's start (1% of the host's
// CPU with 20 chats taking turns).
var insertRunQuery, insertRunFields = compileNamed(insertRun, reflect.TypeFor[runRow]())

// insertRunArgs are row's values for insertRunQuery.
func insertRunArgs(row runRow) []any {
	v := reflect.ValueOf(row)
	args := make([]any, len(insertRunFields))
	for i, idx := range insertRunFields {
		args[i] = reflectx.FieldByIndexesReadOnly(v, idx).Interface()
	}
	return args
}

// namedParam is a :name parameter of a named query (our queries have no
// ':' of any other kind, nor PostgreSQL's '::' casts).
var namedParam = regexp.MustCompile(`:([a-z_]+)`)

// compileNamed turns a named query into a positional one and the field
// (by db tag, as sqlx maps them) of t that each parameter takes. A name
// with no field is a mistake in the program: it panics.
func compileNamed(query string, t reflect.Type) (string, [][]int) {
	var names []string
	positional := namedParam.ReplaceAllStringFunc(query, func(m string) string {
		names = append(names, m[1:])
		return "?"
	})
	fields := reflectx.NewMapperFunc("db", strings.ToLower).TraversalsByName(t, names)
	for i, f := range fields {
		if len(f) == 0 {
			panic(fmt.Sprintf("named query parameter :%s has no db field in %s", names[i], t))
		}
	}
	return positional, fields
}
