package dataset

import (
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// cityRow is a Parquet row with a string feature (a category) that may be null.
type cityRow struct {
	F0    float32 `parquet:"f0"`
	City  *string `parquet:"city,optional,dict"`
	Label float32 `parquet:"label"`
}

var cities = []string{"Tromsø", "Bergen", "Oslo", "Ålesund", "Bodø"}

// cityRows makes n rows from first; row g's city is cities[g%5], null every 9th row; within a
// part the cities first appear in an order other than sorted.
func cityRows(first, n, kinds int) []cityRow {
	rows := make([]cityRow, n)
	for i := range rows {
		g := first + i
		rows[i] = cityRow{F0: float32(g), Label: float32(g % 2)}
		if g%9 != 4 {
			c := cities[g%kinds]
			rows[i].City = &c
		}
	}
	return rows
}

// cityOf is the city a row's value names in m, "" for missing.
func cityOf(t *testing.T, m *Matrix, i int) string {
	t.Helper()
	v := m.Row(i)[1]
	if math.IsNaN(float64(v)) {
		return ""
	}
	return m.Categories[1][int(v)]
}

func wantCity(g, kinds int) string {
	if g%9 == 4 {
		return ""
	}
	return cities[g%kinds]
}

func TestParquetStringColumnIsCategorical(t *testing.T) {
	dir := t.TempDir()
	// Part 0 holds only the first three cities, part 1 all five.
	writeFile(t, filepath.Join(dir, "part-0.parquet"), parquetBytes(t, cityRows(0, 300, 3), 100))
	writeFile(t, filepath.Join(dir, "part-1.parquet"), parquetBytes(t, cityRows(300, 200, 5), 100))
	sorted := slices.Clone(cities)
	slices.Sort(sorted)

	whole, err := Load(Spec{Path: dir, Label: "label"}, Shard{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(whole.Categories[1], sorted) || whole.Categories[0] != nil {
		t.Fatalf("categories %q, want f0 numeric and city %q (sorted)", whole.Categories, sorted)
	}
	if got := whole.CategoryMap(); len(got) != 1 || !slices.Equal(got["city"], sorted) {
		t.Errorf("CategoryMap = %v", got)
	}
	for i := 0; i < whole.Rows; i++ {
		g := int(whole.Row(i)[0])
		kinds := 3
		if g >= 300 {
			kinds = 5
		}
		if got := cityOf(t, whole, i); got != wantCity(g, kinds) {
			t.Fatalf("row %d (global %d): city %q, want %q", i, g, got, wantCity(g, kinds))
		}
	}

	// Two ranks, one part each: each knows its own cities, and after recoding to the union both
	// number every city as the whole read does.
	var ranks []*Matrix
	var union []string
	for r := range 2 {
		m, err := Load(Spec{Path: dir, Label: "label"}, Shard{r, 2})
		if err != nil {
			t.Fatal(err)
		}
		ranks = append(ranks, m)
		union = append(union, m.Categories[1]...)
	}
	if len(ranks[0].Categories[1]) == len(ranks[1].Categories[1]) {
		t.Fatalf("both ranks know the cities %q and %q: want one part each", ranks[0].Categories[1], ranks[1].Categories[1])
	}
	slices.Sort(union)
	union = slices.Compact(union)
	for _, m := range ranks {
		m.Recode([][]string{nil, union})
		if m.UnseenCategories != 0 {
			t.Errorf("unseen %d after recoding to the union", m.UnseenCategories)
		}
		for i := 0; i < m.Rows; i++ {
			g := int(m.Row(i)[0])
			if got, want := m.Row(i)[1], whole.Row(g)[1]; got != want && !(got != got && want != want) {
				t.Fatalf("global row %d: code %v, want %v as in the whole read", g, got, want)
			}
		}
	}

	// An evaluation file numbered by the training data's list: a city the list lacks is missing.
	eval := filepath.Join(t.TempDir(), "eval.parquet")
	writeFile(t, eval, parquetBytes(t, cityRows(0, 45, 5), 100))
	fixed := []string{"Bergen", "Oslo", "Tromsø"}
	m, err := Load(Spec{Path: eval, Label: "label", Categories: map[string][]string{"city": fixed}}, Shard{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(m.Categories[1], fixed) {
		t.Fatalf("categories %q, want the fixed list", m.Categories[1])
	}
	unseen := 0
	for i := 0; i < m.Rows; i++ {
		want := wantCity(i, 5)
		if !slices.Contains(fixed, want) {
			if want != "" {
				unseen++
			}
			want = ""
		}
		if got := cityOf(t, m, i); got != want {
			t.Fatalf("row %d: city %q, want %q", i, got, want)
		}
	}
	if m.UnseenCategories != unseen || unseen == 0 {
		t.Errorf("UnseenCategories = %d, want %d", m.UnseenCategories, unseen)
	}
}

func TestParquetTooManyCategoriesIsRefused(t *testing.T) {
	rows := make([]cityRow, MaxCategories+1)
	for i := range rows {
		c := fmt.Sprint("id-", i)
		rows[i] = cityRow{F0: 1, City: &c}
	}
	path := filepath.Join(t.TempDir(), "ids.parquet")
	writeFile(t, path, parquetBytes(t, rows, len(rows)))
	_, err := Load(Spec{Path: path, Label: "label"}, Shard{})
	if err == nil || !containsAll(err.Error(), `"city"`, fmt.Sprint(MaxCategories), "not a category", "--features") {
		t.Fatalf("got %v, want the column refused as not a category", err)
	}
}

func containsAll(s string, subs ...string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}

// A CSV that prepare-data wrote holds the codes of its schema's categories: Spec.Categories names
// them, and a value that is no code of the list is refused naming the column and the row.
func TestCSVCodesNamedBySchema(t *testing.T) {
	path := filepath.Join(t.TempDir(), "train.csv")
	writeFile(t, path, []byte("x0,color,y\n0.5,2,1\n-0.5,,0\n0.1,0,1\n"))
	names := []string{"amber", "blue", "cyan"}
	m, err := Load(Spec{Path: path, Label: "y", Categories: map[string][]string{"color": names, "not-a-feature": {"a"}}}, Shard{})
	if err != nil {
		t.Fatal(err)
	}
	if m.Categories[0] != nil || !slices.Equal(m.Categories[1], names) || m.Row(0)[1] != 2 {
		t.Fatalf("categories %q, row 0 %v; want color named %q and its code kept", m.Categories, m.Row(0), names)
	}
	for _, bad := range []string{"3", "1.5", "-1"} {
		writeFile(t, path, []byte("x0,color,y\n0.5,0,1\n-0.5,"+bad+",0\n"))
		_, err := Load(Spec{Path: path, Label: "y", Categories: map[string][]string{"color": names}}, Shard{})
		if err == nil || !containsAll(err.Error(), `column "color"`, "row 2", "3 named categories", "integers from 0 to 2") {
			t.Errorf("code %s: got %v, want the column, the row and the codes it may hold", bad, err)
		}
	}
}
