// Compiles the contracts of this directory with solc-js into contracts.json
// (ABI and creation bytecode per contract). Development-time only:
//   cd /tmp/x && npm install solc@0.8.24 @openzeppelin/contracts@5.0.2
//   NODE_PATH=/tmp/x/node_modules node compile.js
const fs = require('fs');
const path = require('path');
const solc = require('solc');

const dir = __dirname;
const names = ['DevToken', 'DevNFT', 'DevMulti', 'WAVAX', 'TokenFactory'];
const sources = {};
for (const n of names) sources[n + '.sol'] = { content: fs.readFileSync(path.join(dir, n + '.sol'), 'utf8') };

function findImports(p) {
  for (const base of (process.env.NODE_PATH || '').split(':').concat([path.join(dir, 'node_modules')])) {
    const f = path.join(base, p);
    if (base && fs.existsSync(f)) return { contents: fs.readFileSync(f, 'utf8') };
  }
  const local = path.join(dir, p);
  if (fs.existsSync(local)) return { contents: fs.readFileSync(local, 'utf8') };
  return { error: 'not found: ' + p };
}

const input = {
  language: 'Solidity',
  sources,
  settings: {
    optimizer: { enabled: true, runs: 200 },
    evmVersion: 'shanghai',
    outputSelection: { '*': { '*': ['abi', 'evm.bytecode.object'] } },
  },
};
const out = JSON.parse(solc.compile(JSON.stringify(input), { import: findImports }));
let failed = false;
for (const e of out.errors || []) {
  console.error(e.formattedMessage);
  if (e.severity === 'error') failed = true;
}
if (failed) process.exit(1);
const result = { compiler: 'solc ' + solc.version(), evmVersion: 'shanghai', openzeppelin: '5.0.2', contracts: {} };
for (const n of names) {
  const c = out.contracts[n + '.sol'][n];
  result.contracts[n] = { abi: c.abi, bytecode: '0x' + c.evm.bytecode.object };
}
fs.writeFileSync(path.join(dir, 'contracts.json'), JSON.stringify(result, null, 1) + '\n');
console.log('wrote contracts.json with', Object.keys(result.contracts).join(', '));
