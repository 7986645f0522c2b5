// Reshapes a leaserace asciicast (v2, on standard input) for a picture
// that loops by itself, on standard output:
//
//	node .ci/pictures-cast.mjs STEP_SECONDS HOLD_SECONDS < race.cast > paced.cast
//
// A README picture cannot be paused, so each frame stays up STEP_SECONDS
// and the last one, which carries the outcome, HOLD_SECONDS before the loop
// starts again. Only what a picture shows is kept: the size, TERM and the
// output events. The header's timestamp (when the run was recorded) and the
// markers are dropped, so the same frames always give the same file.
import { readFileSync } from 'node:fs';

const [step, hold] = process.argv.slice(2).map(Number);
if (!(step > 0) || !(hold > 0)) {
  console.error('usage: node pictures-cast.mjs STEP_SECONDS HOLD_SECONDS < in.cast > out.cast');
  process.exit(2);
}
const lines = readFileSync(0, 'utf8').split('\n').filter((l) => l.trim() !== '');
if (lines.length === 0) {
  console.error('pictures-cast: the asciicast on standard input is empty');
  process.exit(1);
}
const head = JSON.parse(lines[0]);
if (head.version !== 2 || !(head.width > 0) || !(head.height > 0)) {
  console.error('pictures-cast: not an asciicast v2 header: ' + lines[0]);
  process.exit(1);
}

// Output events grouped by their time: leaserace writes one group per
// frame, then a last group (showing the cursor again) that ends the
// recording one beat after the last frame.
const groups = [];
for (const l of lines.slice(1)) {
  const [at, code, data] = JSON.parse(l);
  if (code !== 'o') continue;
  const last = groups[groups.length - 1];
  if (last && last.at === at) last.data += data;
  else groups.push({ at, data });
}
if (groups.length < 2) {
  console.error('pictures-cast: expected a frame per step and an end event, found ' + groups.length + ' group(s)');
  process.exit(1);
}

const out = [JSON.stringify({ version: 2, width: head.width, height: head.height, env: { TERM: head.env?.TERM ?? 'xterm-256color' } })];
groups.forEach((g, i) => {
  const at = i < groups.length - 1 ? i * step : (i - 1) * step + hold;
  out.push(JSON.stringify([at, 'o', g.data]));
});
process.stdout.write(out.join('\n') + '\n');
