// SPDX-License-Identifier: MIT
// Builds build/idmint.node, run by npm's "install" script: one cc command
// against Node's own headers (node_api.h) and the static libraries of a
// built idmint tree, so that nothing is downloaded at install time.
//
// Where things are (environment, else the default):
//   IDMINT_BUILD_DIR   the CMake build tree      ../../build (from this package)
//   IDMINT_SOURCE_DIR  the source tree (include/) ../..
//   NODE_INCLUDE_DIR   the directory of node_api.h: <node prefix>/include/node,
//                      else /usr/include/node (Debian's libnode-dev)
//   CC                 the C compiler            cc
'use strict';

const fs = require('node:fs');
const path = require('node:path');
const { execFileSync } = require('node:child_process');

const pkg = path.resolve(__dirname, '..');
const src = path.resolve(process.env.IDMINT_SOURCE_DIR || path.join(pkg, '..', '..'));
const build = path.resolve(process.env.IDMINT_BUILD_DIR || path.join(src, 'build'));
const out = path.join(pkg, 'build', 'idmint.node');

function fail(msg) {
  console.error(`idmint: ${msg}`);
  process.exit(1);
}

function nodeIncludeDir() {
  const candidates = [
    process.env.NODE_INCLUDE_DIR,
    path.join(path.dirname(path.dirname(process.execPath)), 'include', 'node'),
    '/usr/include/node',
  ].filter(Boolean);
  const found = candidates.find((d) => fs.existsSync(path.join(d, 'node_api.h')));
  if (!found) {
    fail(`node_api.h not found in ${candidates.join(', ')}: install Debian's libnode-dev ` +
         'or set NODE_INCLUDE_DIR');
  }
  return found;
}

// The client libraries of the backends the build has (its CMakeCache.txt):
// the static libraries leave them to the final link.
function backendLibs() {
  let cache = '';
  try {
    cache = fs.readFileSync(path.join(build, 'CMakeCache.txt'), 'utf8');
  } catch {
    return [];
  }
  const on = (name) => new RegExp(`^${name}:BOOL=(ON|1|TRUE|YES)$`, 'mi').test(cache);
  const libs = [];
  if (on('IDM_WITH_ETCD')) libs.push('-lcurl', '-ljson-c');
  if (on('IDM_WITH_ZOOKEEPER')) libs.push('-lzookeeper_mt');
  if (on('IDM_WITH_POSTGRES')) libs.push('-lpq');
  if (on('IDM_WITH_SQLITE')) libs.push('-lsqlite3');
  return libs;
}

const archives = ['libidmint_lease.a', 'libidmint_segment.a', 'libidmint.a']
  .map((a) => path.join(build, a));
const missing = archives.filter((a) => !fs.existsSync(a));
if (missing.length) {
  fail(`${missing.join(', ')} missing: build the C library first ` +
       `(cmake -S ${src} -B ${build} && cmake --build ${build}), or set IDMINT_BUILD_DIR`);
}
if (!fs.existsSync(path.join(src, 'include', 'idmint', 'idmint.h'))) {
  fail(`no include/idmint/idmint.h under ${src}: set IDMINT_SOURCE_DIR`);
}

fs.mkdirSync(path.dirname(out), { recursive: true });
const args = [
  '-std=c11', '-O2', '-fPIC', '-shared', '-fvisibility=hidden',
  '-Wall', '-Wextra', '-Werror', '-D_GNU_SOURCE',
  '-I', path.join(src, 'include'), '-I', nodeIncludeDir(),
  '-o', out + '.tmp', path.join(pkg, 'src', 'addon.c'),
  // The libraries' own symbols stay inside the addon.
  '-Wl,--exclude-libs,ALL',
  ...archives, ...backendLibs(), '-lpthread',
];
const cc = process.env.CC || 'cc';
try {
  execFileSync(cc, args, { stdio: 'inherit' });
} catch (e) {
  fail(`${cc} failed (${e.status ?? e.message}); command: ${cc} ${args.join(' ')}`);
}
fs.renameSync(out + '.tmp', out);
console.log(`idmint: built ${path.relative(process.cwd(), out) || out}`);
