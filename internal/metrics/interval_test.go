package metrics

import (
	"math/big"
	"math/rand"
	"sort"
	"testing"
	"time"
)

func ts(s string) int64 {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t.Unix()
}

func TestIntervalFloorNextPrev(t *testing.T) {
	cases := []struct {
		iv               Interval
		at               string
		floor, next, prv string
	}{
		{Hour, "2024-02-29T13:45:10Z", "2024-02-29T13:00:00Z", "2024-02-29T14:00:00Z", "2024-02-29T12:00:00Z"},
		{Hour, "2024-02-29T13:00:00Z", "2024-02-29T13:00:00Z", "2024-02-29T14:00:00Z", "2024-02-29T12:00:00Z"},
		{Day, "2024-02-29T23:59:59Z", "2024-02-29T00:00:00Z", "2024-03-01T00:00:00Z", "2024-02-28T00:00:00Z"},
		{Day, "1970-01-01T00:00:00Z", "1970-01-01T00:00:00Z", "1970-01-02T00:00:00Z", "1969-12-31T00:00:00Z"},
		// Weeks start on Monday 0:00 UTC.
		{Week, "2024-03-03T23:00:00Z", "2024-02-26T00:00:00Z", "2024-03-04T00:00:00Z", "2024-02-19T00:00:00Z"}, // Sunday
		{Week, "2024-03-04T00:00:00Z", "2024-03-04T00:00:00Z", "2024-03-11T00:00:00Z", "2024-02-26T00:00:00Z"}, // Monday
		{Week, "1970-01-01T12:00:00Z", "1969-12-29T00:00:00Z", "1970-01-05T00:00:00Z", "1969-12-22T00:00:00Z"}, // Thursday
		{Week, "2026-11-22T12:00:00Z", "2026-11-16T00:00:00Z", "2026-11-23T00:00:00Z", "2026-11-09T00:00:00Z"},
		{Month, "2024-02-29T13:45:10Z", "2024-02-01T00:00:00Z", "2024-03-01T00:00:00Z", "2024-01-01T00:00:00Z"},
		{Month, "2024-01-31T00:00:00Z", "2024-01-01T00:00:00Z", "2024-02-01T00:00:00Z", "2023-12-01T00:00:00Z"},
		{Month, "2023-12-31T23:59:59Z", "2023-12-01T00:00:00Z", "2024-01-01T00:00:00Z", "2023-11-01T00:00:00Z"},
	}
	for _, c := range cases {
		f := c.iv.Floor(ts(c.at))
		if f != ts(c.floor) {
			t.Errorf("%s.Floor(%s) = %s, want %s", c.iv, c.at, time.Unix(f, 0).UTC(), c.floor)
		}
		if n := c.iv.Next(f); n != ts(c.next) {
			t.Errorf("%s.Next(%s) = %s, want %s", c.iv, c.floor, time.Unix(n, 0).UTC(), c.next)
		}
		if p := c.iv.Prev(f); p != ts(c.prv) {
			t.Errorf("%s.Prev(%s) = %s, want %s", c.iv, c.floor, time.Unix(p, 0).UTC(), c.prv)
		}
	}
}

// Every timestamp lies in the interval Floor gives; Next and Prev walk
// whole intervals; interval starts are 0:00 UTC of Mondays / 1st of months.
func TestIntervalProperties(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	for _, iv := range []Interval{Hour, Day, Week, Month} {
		for i := 0; i < 20000; i++ {
			at := rng.Int63n(1 << 35) // up to year 3058
			f := iv.Floor(at)
			n := iv.Next(f)
			if !(f <= at && at < n) {
				t.Fatalf("%s: %d not in [%d, %d)", iv, at, f, n)
			}
			if iv.Floor(f) != f || iv.Floor(n) != n || iv.Prev(n) != f || iv.Next(iv.Prev(f)) != f {
				t.Fatalf("%s: Floor/Next/Prev disagree around %d", iv, at)
			}
			u := time.Unix(f, 0).UTC()
			if iv >= Day && (u.Hour() != 0 || u.Minute() != 0 || u.Second() != 0) {
				t.Fatalf("%s: start %s is not 0:00 UTC", iv, u)
			}
			if iv == Week && u.Weekday() != time.Monday {
				t.Fatalf("week start %s is a %s", u, u.Weekday())
			}
			if iv == Month && u.Day() != 1 {
				t.Fatalf("month start %s is not the 1st", u)
			}
		}
	}
}

func TestParseInterval(t *testing.T) {
	for _, s := range Intervals {
		iv, err := ParseInterval(s)
		if err != nil || iv.String() != s {
			t.Errorf("ParseInterval(%q) = %v, %v", s, iv, err)
		}
	}
	for _, s := range []string{"", "Hour", "year", "minute", "day "} {
		if _, err := ParseInterval(s); err == nil {
			t.Errorf("ParseInterval(%q) accepted", s)
		}
	}
}

// Text order of UnitsKey is numeric order, for any size up to 99 digits.
func TestUnitsKeyOrder(t *testing.T) {
	rng := rand.New(rand.NewSource(2))
	var vals []*big.Int
	for i := 0; i < 3000; i++ {
		v := new(big.Int).Rand(rng, new(big.Int).Lsh(big.NewInt(1), uint(1+rng.Intn(300))))
		vals = append(vals, v.Add(v, big.NewInt(1)))
	}
	vals = append(vals, big.NewInt(1), big.NewInt(9), big.NewInt(10), big.NewInt(99), big.NewInt(100))
	type kv struct {
		k string
		v *big.Int
	}
	var kvs []kv
	for _, v := range vals {
		k, err := UnitsKey(v)
		if err != nil {
			t.Fatal(err)
		}
		d, err := ParseUnitsKey(k)
		if err != nil || d != v.String() {
			t.Fatalf("ParseUnitsKey(%q) = %q, %v; want %s", k, d, err, v)
		}
		kvs = append(kvs, kv{k, v})
	}
	sort.Slice(kvs, func(i, j int) bool { return kvs[i].k < kvs[j].k })
	for i := 1; i < len(kvs); i++ {
		if kvs[i-1].v.Cmp(kvs[i].v) > 0 {
			t.Fatalf("key order %q < %q but %s > %s", kvs[i-1].k, kvs[i].k, kvs[i-1].v, kvs[i].v)
		}
	}
	for _, bad := range []*big.Int{big.NewInt(0), big.NewInt(-5), new(big.Int).Exp(big.NewInt(10), big.NewInt(99), nil)} {
		if k, err := UnitsKey(bad); err == nil {
			t.Errorf("UnitsKey(%s) = %q, want an error", bad, k)
		}
	}
	for _, bad := range []string{"", "1", "01", "0x1", "0201", "0100", "02 1", "021x", "-11", "0310", "99" + "1"} {
		if d, err := ParseUnitsKey(bad); err == nil {
			t.Errorf("ParseUnitsKey(%q) = %q, want an error", bad, d)
		}
	}
}
