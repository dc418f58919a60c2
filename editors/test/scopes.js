// Tokenizes .wl files with editors/vscode/syntaxes/wl.tmLanguage.json the way VS Code does
// (vscode-textmate over vscode-oniguruma).
//
//   node editors/test/scopes.js NODE_MODULES_DIR corpus|golden|update
//
// corpus: fails when the grammar leaves text of a shipped file unexplained: a non-space token
//   scoped only `source.wl` means no rule knew it, and `invalid.*` means a rule called it a
//   mistake, which no shipped file has.
// golden: compares the scopes of editors/test/sample.wl with editors/test/sample.scopes;
//   update writes them there instead, for review.
//
// tests/editor_grammar.rs runs this; scripts/test installs the two packages.
'use strict';
const fs = require('fs');
const path = require('path');

const [modules, mode] = process.argv.slice(2);
if (!modules || !['corpus', 'golden', 'update'].includes(mode)) {
  console.error('usage: node editors/test/scopes.js NODE_MODULES_DIR corpus|golden|update');
  process.exit(2);
}
const textmate = require(path.resolve(modules, 'vscode-textmate'));
const oniguruma = require(path.resolve(modules, 'vscode-oniguruma'));

const repo = path.resolve(__dirname, '../..');
const grammarFile = path.join(repo, 'editors/vscode/syntaxes/wl.tmLanguage.json');
const sample = path.join(repo, 'editors/test/sample.wl');
const golden = path.join(repo, 'editors/test/sample.scopes');

// Every .wl file a user gets or copies from, and the parse and plan golden inputs (one per
// construct of the language); not the error goldens or fuzz seeds, which are wrong on purpose.
const WL_DIRS = ['workloads', 'stdlib', 'examples', 'tests/golden/parse', 'tests/golden/plan', 'editors'];
// The ```wl blocks of the documentation, which tests/corpus.rs checks (```wl,error ones fail
// to check on purpose, and are left out).
const MD_FILES = ['README.md', ...fs.readdirSync(path.join(repo, 'docs')).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)];

function wlFiles(dir) {
  const full = path.join(repo, dir);
  if (!fs.existsSync(full)) return [];
  return fs.readdirSync(full, { withFileTypes: true }).flatMap((e) => {
    const rel = `${dir}/${e.name}`;
    if (e.isDirectory()) return wlFiles(rel);
    return e.name.endsWith('.wl') ? [rel] : [];
  });
}

// [{name, firstLine, text}]: whole files, and doc blocks with the line they start on.
function sources() {
  const out = WL_DIRS.flatMap(wlFiles).sort().map((f) => ({ name: f, firstLine: 1, text: fs.readFileSync(path.join(repo, f), 'utf8') }));
  for (const md of MD_FILES) {
    const lines = fs.readFileSync(path.join(repo, md), 'utf8').split('\n');
    for (let i = 0; i < lines.length; i++) {
      if (lines[i].trim() !== '```wl') continue;
      const start = i + 1;
      let end = start;
      while (end < lines.length && !lines[end].startsWith('```')) end++;
      out.push({ name: md, firstLine: start + 1, text: lines.slice(start, end).join('\n') });
      i = end;
    }
  }
  return out;
}

// source.sql is the editor's own SQL grammar. This stand-in (keywords, quoted strings) shows in
// the golden that wl hands the text of `sql "..."` to it, and that a quote or `${}` inside still
// ends where wl says.
const SQL_STAND_IN = {
  scopeName: 'source.sql',
  patterns: [
    { name: 'keyword.other.sql', match: '(?i)\\b(?:select|from|where|and|group|by|order|as)\\b' },
    { name: 'string.quoted.single.sql', begin: "'", end: "'" },
  ],
};

function tokenize(grammar, text) {
  let stack = textmate.INITIAL;
  return text.split(/\r?\n/).map((line) => {
    const r = grammar.tokenizeLine(line, stack);
    stack = r.ruleStack;
    return {
      line,
      tokens: r.tokens.map((t) => ({ text: line.slice(t.startIndex, t.endIndex), col: t.startIndex + 1, scopes: t.scopes })),
    };
  });
}

// One line of source, then its tokens with their scopes past `source.wl`.
function render(lines) {
  return lines
    .map(({ line, tokens }, i) => {
      const shown = tokens.filter((t) => /\S/.test(t.text)).map((t) => `  ${JSON.stringify(t.text)} ${t.scopes.slice(1).join(' ')}`);
      return [`${i + 1}: ${line}`, ...shown].join('\n');
    })
    .join('\n') + '\n';
}

async function main() {
  const wasm = fs.readFileSync(path.join(path.dirname(require.resolve(path.resolve(modules, 'vscode-oniguruma'))), 'onig.wasm'));
  await oniguruma.loadWASM(wasm.buffer.slice(wasm.byteOffset, wasm.byteOffset + wasm.byteLength));
  const registry = new textmate.Registry({
    onigLib: Promise.resolve({
      createOnigScanner: (patterns) => new oniguruma.OnigScanner(patterns),
      createOnigString: (s) => new oniguruma.OnigString(s),
    }),
    loadGrammar: async (scope) => {
      if (scope === 'source.wl') return textmate.parseRawGrammar(fs.readFileSync(grammarFile, 'utf8'), grammarFile);
      return scope === 'source.sql' ? SQL_STAND_IN : null;
    },
  });
  const grammar = await registry.loadGrammar('source.wl');

  const problems = [];
  let files = 0;
  for (const src of mode === 'corpus' ? sources() : []) {
    files++;
    tokenize(grammar, src.text).forEach(({ tokens }, i) => {
      for (const t of tokens) {
        if (!/\S/.test(t.text)) continue;
        const unexplained = t.scopes.length === 1;
        const invalid = t.scopes.some((s) => s.startsWith('invalid'));
        if (unexplained || invalid) {
          problems.push(`${src.name}:${src.firstLine + i}:${t.col}: ${JSON.stringify(t.text)} scoped ${t.scopes.join(' ')}`);
        }
      }
    });
  }
  if (mode === 'corpus' && files < 20) problems.push(`only ${files} sources found under ${repo}: the test lost its corpus`);

  const got = mode === 'corpus' ? '' : render(tokenize(grammar, fs.readFileSync(sample, 'utf8').replace(/\n$/, '')));
  if (mode === 'update') {
    fs.writeFileSync(golden, got);
  } else if (mode === 'golden') {
    const want = fs.existsSync(golden) ? fs.readFileSync(golden, 'utf8') : '';
    if (got !== want) {
      const g = got.split('\n');
      const w = want.split('\n');
      let n = 0;
      while (n < g.length && g[n] === w[n]) n++;
      problems.push(
        `editors/test/sample.scopes differs from the scopes of editors/test/sample.wl from line ${n + 1} of the golden:\n` +
          `  want: ${w[n] ?? '(end)'}\n  got:  ${g[n] ?? '(end)'}\n` +
          'review the change, then write it with INSTA_UPDATE=always cargo test --test editor_grammar',
      );
    }
  }

  if (problems.length) {
    console.error(problems.join('\n'));
    console.error(`${problems.length} problem(s)`);
    process.exit(1);
  }
  if (mode === 'corpus') console.log(`${files} sources tokenized: every non-space token has a scope of wl's own, none invalid`);
  if (mode === 'golden') console.log('editors/test/sample.wl: scopes as in editors/test/sample.scopes');
  if (mode === 'update') console.log('editors/test/sample.scopes written: review it with git diff');
}

main().catch((e) => {
  console.error(e && e.stack ? e.stack : e);
  process.exit(1);
});
