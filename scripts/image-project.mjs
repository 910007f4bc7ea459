#!/usr/bin/env node
// Writes the package.json of the image's project (Dockerfile, stage "project"; scripts/docker-build.sh
// --local does the same): a private project whose one dependency is the packed tarball in <folder>,
// as a user's project installs it, so the image runs what `npm install <tgz>` gives a user.
// With <with-s3> = 1 it also depends on the AWS SDK (the package's optional peers, at the ranges
// the package declares), for S3 sinks and states.
// usage: node scripts/image-project.mjs <folder> [<with-s3>]
import { execFileSync } from 'node:child_process';
import { readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const [folder = '.', withS3 = '0'] = process.argv.slice(2);
const tarballs = readdirSync(folder).filter((f) => /^catalog-streams-.*\.tgz$/.test(f));
if (tarballs.length !== 1) {
  console.error(`image-project: expected one catalog-streams-*.tgz in ${folder}, found ${tarballs.length}`);
  process.exit(2);
}
const dependencies = { 'catalog-streams': `file:${tarballs[0]}` };
if (withS3 === '1') {
  // The ranges come from the tarball itself, so the image gets the SDK the package was tested with.
  const manifest = execFileSync('tar', ['-xzOf', join(folder, tarballs[0]), 'package/package.json'], {
    encoding: 'utf8',
  });
  Object.assign(dependencies, JSON.parse(manifest).peerDependencies);
}
const project = { name: 'catalog-streams-image', private: true, dependencies };
writeFileSync(join(folder, 'package.json'), `${JSON.stringify(project, null, 2)}\n`);
console.log(`image-project: ${Object.keys(dependencies).join(', ')}`);
