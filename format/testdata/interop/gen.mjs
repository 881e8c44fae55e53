// Writes covariance fixtures with Apache Arrow's JavaScript implementation
// (npm package apache-arrow), an Arrow writer independent of ours. Run from
// this directory after `npm ci` (package.json pins the version):
//
//	node gen.mjs
//
// js-fixedlist.arrows  stream: cov FixedSizeList<float64>[5] (equicorrelated
//                      rho = 1/2, so P(v >= 0) = 1/6), lower, id columns
// js-list.arrows       stream: cov as a variable-size List<float64>, same matrix
// js-columns.arrows    stream: a 3 x 3 matrix as float64 columns a, b, c with
//                      correlations 0.5, -0.2, 0.3 (P from the closed form)
// js-columns.arrow     the same as an Arrow IPC file
import { createRequire } from 'module';
import { writeFileSync } from 'fs';
const require = createRequire(import.meta.url);
const arrow = require('apache-arrow');
const { Field, FixedSizeList, List, Float64, Utf8, Table, vectorFromArray, tableToIPC } = arrow;

const n = 5;
const rows = [];
for (let i = 0; i < n; i++) {
  const r = [];
  for (let j = 0; j < n; j++) r.push(i === j ? 1 : 0.5);
  rows.push(r);
}
const item = new Field('item', new Float64(), false);
const fixed = new Table({
  cov: vectorFromArray(rows, new FixedSizeList(n, item)),
  lower: vectorFromArray(rows.map(() => 0), new Float64()),
  id: vectorFromArray(rows.map((_, i) => 'v' + i), new Utf8()),
});
writeFileSync('js-fixedlist.arrows', tableToIPC(fixed, 'stream'));

const list = new Table({ cov: vectorFromArray(rows, new List(item)) });
writeFileSync('js-list.arrows', tableToIPC(list, 'stream'));

const m = [[1, 0.5, -0.2], [0.5, 1, 0.3], [-0.2, 0.3, 1]];
const cols = new Table({
  a: vectorFromArray(m.map((r) => r[0]), new Float64()),
  b: vectorFromArray(m.map((r) => r[1]), new Float64()),
  c: vectorFromArray(m.map((r) => r[2]), new Float64()),
});
writeFileSync('js-columns.arrows', tableToIPC(cols, 'stream'));
writeFileSync('js-columns.arrow', tableToIPC(cols, 'file'));
