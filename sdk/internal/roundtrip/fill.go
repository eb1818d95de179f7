// Package roundtrip helps the sdk's tests prove that every field of a
// type survives its proto conversion: Fill sets every exported field to a
// value that is not its zero, so a field a conversion forgets comes back
// zero and the comparison fails. OverTheWire sends a proto message through
// its wire encoding, as a peer would. Only tests use it.
package roundtrip

import (
	"fmt"
	"reflect"
	"time"
)

// Fill sets every exported field reachable from ptr (a pointer to a struct)
// to a non-zero value: strings name their field, numbers are small and
// whole (durations whole seconds, times whole seconds in UTC, so wire
// formats with less precision keep them), slices and maps get one element.
func Fill(ptr any) {
	v := reflect.ValueOf(ptr)
	if v.Kind() != reflect.Pointer || v.IsNil() {
		panic("roundtrip.Fill needs a non-nil pointer")
	}
	fill(v.Elem(), "v")
}

var timeType = reflect.TypeOf(time.Time{})

func fill(v reflect.Value, name string) {
	switch {
	case v.Type() == timeType:
		v.Set(reflect.ValueOf(time.Unix(1700000000, 0).UTC()))
		return
	case v.Type() == reflect.TypeOf(time.Duration(0)):
		v.SetInt(int64(3 * time.Second))
		return
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString("x-" + name)
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(7)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(7)
	case reflect.Float32, reflect.Float64:
		v.SetFloat(1.5)
	case reflect.Slice:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			// Bytes are usually JSON on our wire: keep them valid JSON.
			v.SetBytes([]byte(fmt.Sprintf(`{"field":%q}`, name)))
			return
		}
		s := reflect.MakeSlice(v.Type(), 1, 1)
		fill(s.Index(0), name+"[0]")
		v.Set(s)
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		k := reflect.New(v.Type().Key()).Elem()
		fill(k, name+".key")
		e := reflect.New(v.Type().Elem()).Elem()
		fill(e, name+".value")
		m.SetMapIndex(k, e)
		v.Set(m)
	case reflect.Pointer:
		p := reflect.New(v.Type().Elem())
		fill(p.Elem(), name)
		v.Set(p)
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			if f := v.Type().Field(i); f.IsExported() {
				fill(v.Field(i), name+"."+f.Name)
			}
		}
	}
}
