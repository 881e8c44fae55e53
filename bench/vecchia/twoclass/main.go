// Command twoclass writes the large-N issue's two-class problem as CSV:
// n points, half from N((0.75, 0.75), I) labelled +1 and half from
// N((-0.75, -0.75), I) labelled -1, in random order (columns x1, x2, y).
// The same -n and -seed give the same file. The Bayes classifier's log
// odds are 1.5 (x1 + x2).
//
//	go run ./bench/vecchia/twoclass -n 100000 -seed 1 > train.csv
package main

import (
	"bufio"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
)

func main() {
	n := flag.Int("n", 1000, "points")
	seed := flag.Uint64("seed", 1, "random seed")
	flag.Parse()
	if err := write(os.Stdout, *n, *seed); err != nil {
		fmt.Fprintln(os.Stderr, "twoclass:", err)
		os.Exit(1)
	}
}

func write(f *os.File, n int, seed uint64) error {
	r := rand.New(rand.NewPCG(seed, 0x7477))
	y := make([]int, n)
	for i := range y {
		y[i] = 1 - 2*(i%2)
	}
	r.Shuffle(n, func(i, j int) { y[i], y[j] = y[j], y[i] })
	w := bufio.NewWriter(f)
	w.WriteString("x1,x2,y\n")
	for _, s := range y {
		m := 0.75 * float64(s)
		b := strconv.AppendFloat(nil, m+r.NormFloat64(), 'g', -1, 64)
		b = append(b, ',')
		b = strconv.AppendFloat(b, m+r.NormFloat64(), 'g', -1, 64)
		b = append(b, ',')
		b = strconv.AppendInt(b, int64(s), 10)
		b = append(b, '\n')
		if _, err := w.Write(b); err != nil {
			return err
		}
	}
	return w.Flush()
}
