// One file for both stages: the post stage is told apart by the state the main one saved.
const fs = require("fs");
const path = require("path");
const { execFileSync } = require("child_process");

const input = (name) => process.env[`INPUT_${name.toUpperCase()}`] || "";
const store = process.env.ACT_CACHE_STORE;
const key = input("key");
const paths = input("path")
  .split("\n")
  .map((line) => line.trim().replace(/^~(?=\/|$)/, process.env.HOME || "~"))
  .filter(Boolean);
const tarFile = store ? path.join(store, `${key.replace(/[^A-Za-z0-9._-]/g, "_")}.tar`) : "";

if (process.env.STATE_stage === "main") {
  if (store && process.env.STATE_hit !== "true") {
    const present = paths.filter((p) => fs.existsSync(p));
    if (present.length) {
      fs.mkdirSync(store, { recursive: true });
      execFileSync("tar", ["-cPf", tarFile, ...present]);
      console.log(`saved ${present.join(", ")} as ${key}`);
    }
  }
} else {
  const hit = Boolean(store) && fs.existsSync(tarFile);
  if (hit) {
    execFileSync("tar", ["-xPf", tarFile]);
    console.log(`restored ${key}`);
  } else {
    console.log(`no cache for ${key}`);
  }
  fs.appendFileSync(process.env.GITHUB_OUTPUT, `cache-hit=${hit}\n`);
  fs.appendFileSync(process.env.GITHUB_STATE, `stage=main\nhit=${hit}\n`);
}
