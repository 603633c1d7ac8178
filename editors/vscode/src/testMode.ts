import * as fs from "fs";
export async function runScenario(_api: unknown, file: string): Promise<void> {
  fs.writeFileSync(file, JSON.stringify({ ok: true, pid: process.pid }));
}
