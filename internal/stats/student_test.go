package stats

import (
	"math"
	"testing"
)

func TestTQuantile975(t *testing.T) {
	// Printed tables give three decimals.
	for _, c := range []struct {
		df   int
		want float64
	}{
		{1, 12.706}, {2, 4.303}, {5, 2.571}, {9, 2.262}, {10, 2.228}, {30, 2.042}, {120, 1.980},
		{1000, 1.962}, {100000, 1.960}, {math.MaxInt, 1.960},
	} {
		if got := TQuantile975(c.df); math.Abs(got-c.want) > 0.0005 {
			t.Errorf("TQuantile975(%d) = %.6f, want %.3f", c.df, got, c.want)
		}
	}
	for _, df := range []int{0, -1, math.MinInt} {
		if got := TQuantile975(df); !math.IsNaN(got) {
			t.Errorf("TQuantile975(%d) = %g, want NaN", df, got)
		}
	}
}

// TestTQuantile975Precise holds the quantile to closed forms (Cauchy for
// one degree of freedom, the algebraic ones for two and four) and to
// values computed separately at high precision, fractional degrees of
// freedom included (RatioOfMeans uses them).
func TestTQuantile975Precise(t *testing.T) {
	const p = 0.975
	alpha := 4 * p * (1 - p)
	for _, c := range []struct {
		name string
		df   float64
		want float64
	}{
		{"Cauchy", 1, math.Tan(math.Pi * (p - 0.5))},
		{"two", 2, (2*p - 1) / math.Sqrt(2*p*(1-p))},
		{"four", 4, math.Sqrt(4/math.Sqrt(alpha)*math.Cos(math.Acos(math.Sqrt(alpha))/3) - 4)},
		{"three", 3, 3.1824463052837096},
		{"thirty", 30, 2.0422724563012383},
		{"2.3", 2.3, 3.8071632082321321},
		{"7.5", 7.5, 2.3330396268649746},
		{"below the expansion", expansionDF - 1, 1.9623414611334},
		{"at the expansion", expansionDF, 1.9623390808264085},
		{"1e5", 1e5, 1.9599877075346096},
		{"normal", math.Inf(1), z975},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := tQuantile975(c.df); math.Abs(got-c.want) > 1e-9*c.want {
				t.Errorf("tQuantile975(%g) = %.15f, want %.15f", c.df, got, c.want)
			}
		})
	}
	if math.Abs(z975-1.959963984540054) > 1e-15 {
		t.Errorf("z975 = %.16f", z975)
	}
}

// The quantile falls as the degrees of freedom grow, across the switch to
// the expansion too, and stays above the normal quantile.
func TestTQuantile975Decreases(t *testing.T) {
	prev := math.Inf(1)
	for df := 1; df <= 3*expansionDF; df++ {
		q := TQuantile975(df)
		if !(q < prev) || !(q > z975) {
			t.Fatalf("TQuantile975(%d) = %.15f after %.15f (normal %.15f)", df, q, prev, z975)
		}
		prev = q
	}
}

func TestStudentTail(t *testing.T) {
	for _, x := range []float64{0, 0.1, 0.5, 1, 2, 4.3, 12.7, 100, 1e6} {
		cauchy := 0.5 - math.Atan(x)/math.Pi
		if got := studentTail(x, 1); math.Abs(got-cauchy) > 1e-14 {
			t.Errorf("studentTail(%g, 1) = %.16g, want %.16g", x, got, cauchy)
		}
		two := 0.5 - x/(2*math.Sqrt(2+x*x))
		if got := studentTail(x, 2); math.Abs(got-two) > 1e-14 {
			t.Errorf("studentTail(%g, 2) = %.16g, want %.16g", x, got, two)
		}
	}
}

func TestBetaInc(t *testing.T) {
	for _, x := range []float64{0, 1e-9, 0.01, 0.3, 0.5, 0.77, 0.999, 1} {
		for _, c := range []struct {
			name string
			a, b float64
			want float64
		}{
			{"uniform", 1, 1, x},
			{"a=3, b=1", 3, 1, x * x * x},
			{"a=1, b=2.5", 1, 2.5, 1 - math.Pow(1-x, 2.5)},
			{"arcsine", 0.5, 0.5, 2 / math.Pi * math.Asin(math.Sqrt(x))},
		} {
			if got := betaInc(c.a, c.b, x, 1-x); math.Abs(got-c.want) > 1e-13 {
				t.Errorf("%s: I(%g) = %.16g, want %.16g", c.name, x, got, c.want)
			}
		}
	}
}
