// Command threeclass writes a C-class problem as CSV (docs/vecchia.md's
// multi-class section): n points, point i of class c = i mod C (labels
// c0, c1, ...) from N(1.25 (cos(2 pi c / C), sin(2 pi c / C)), I), so
// that for C = 3 neighbouring classes' centres are 2.17 apart, about the
// two-class problem's 2.12 (bench/vecchia/twoclass). The same -n,
// -classes and -seed give the same file. The Bayes classifier's
// probability of class c is proportional to exp(-|x - centre_c|^2 / 2).
//
//	go run ./bench/vecchia/threeclass -n 100000 -seed 1 > train.csv
package main

import (
	"bufio"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"strconv"
)

func main() {
	n := flag.Int("n", 1000, "points")
	classes := flag.Int("classes", 3, "classes")
	seed := flag.Uint64("seed", 1, "random seed")
	flag.Parse()
	if *classes < 2 {
		fmt.Fprintln(os.Stderr, "threeclass: -classes must be 2 or more")
		os.Exit(2)
	}
	if err := write(os.Stdout, *n, *classes, *seed); err != nil {
		fmt.Fprintln(os.Stderr, "threeclass:", err)
		os.Exit(1)
	}
}

func write(f *os.File, n, classes int, seed uint64) error {
	r := rand.New(rand.NewPCG(seed, 0x3c1a55))
	w := bufio.NewWriter(f)
	w.WriteString("x1,x2,y\n")
	for i := range n {
		c := i % classes
		a := 2 * math.Pi * float64(c) / float64(classes)
		b := strconv.AppendFloat(nil, 1.25*math.Cos(a)+r.NormFloat64(), 'g', -1, 64)
		b = append(b, ',')
		b = strconv.AppendFloat(b, 1.25*math.Sin(a)+r.NormFloat64(), 'g', -1, 64)
		b = append(b, ",c"...)
		b = strconv.AppendInt(b, int64(c), 10)
		b = append(b, '\n')
		if _, err := w.Write(b); err != nil {
			return err
		}
	}
	return w.Flush()
}
