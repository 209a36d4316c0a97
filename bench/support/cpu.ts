/**
 * Where the CPU went during a measurement, on Linux (from /proc): this process, a server
 * process under test, every PostgreSQL backend, and the whole machine. On a 2-core box the
 * client, the server and the database share the cores, and other work on the box takes its
 * share too, so a throughput figure means little without these.
 */
import { readdirSync, readFileSync } from "node:fs"

/** Linux reports process times in USER_HZ ticks, 100 per second on every mainstream build. */
const TICK_MS = 10

/** CPU milliseconds consumed over `wallMs` (or, in a snapshot, up to now). */
export interface CpuTime {
  readonly wallMs: number
  readonly selfMs: number
  readonly serverMs: number
  readonly postgresMs: number
  readonly machineBusyMs: number
  /** Time the hypervisor ran something else while this virtual machine had work. */
  readonly stealMs: number
}

/** Cores in use on average (1 = one core fully busy). */
export interface CoresUsed {
  readonly self: number
  readonly server: number
  readonly postgres: number
  /** The machine's busy time not accounted for by the three above: other work on the box. */
  readonly rest: number
  /** Cores the hypervisor gave to other machines while this one had work (steal). */
  readonly steal: number
}

const read = (path: string): string | undefined => {
  try {
    return readFileSync(path, "utf8")
  } catch {
    return undefined
  }
}

/** utime + stime of a process, in ms; the command name may hold spaces, so fields count from its ")". */
const processMs = (pid: number | string): number => {
  const stat = read(`/proc/${pid}/stat`)
  if (stat === undefined) return 0
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ")
  return (Number(fields[11]) + Number(fields[12])) * TICK_MS
}

const postgresMs = (): number => {
  let total = 0
  for (const pid of readdirSync("/proc")) {
    if (!/^\d+$/.test(pid)) continue
    if (read(`/proc/${pid}/comm`)?.trim() === "postgres") total += processMs(pid)
  }
  return total
}

/** Busy time of all cores (user, nice, system, irq, softirq) and steal time, in ms. */
const machineMs = (): { readonly busy: number; readonly steal: number } => {
  const [, ...ticks] = read("/proc/stat")!.split("\n")[0]!.trim().split(/\s+/).map(Number)
  const [user, nice, system, , , irq, softirq, steal] = ticks
  return { busy: (user! + nice! + system! + irq! + softirq!) * TICK_MS, steal: steal! * TICK_MS }
}

/** Whether /proc can be read here; elsewhere no CPU figures are given. */
export const available = read("/proc/stat") !== undefined

/** The counters now, `wallMs` being the time since an arbitrary origin. */
export const snapshot = (serverPid: number | undefined): CpuTime => {
  const self = process.cpuUsage()
  const machine = machineMs()
  return {
    wallMs: performance.now(),
    selfMs: (self.user + self.system) / 1000,
    serverMs: serverPid === undefined ? 0 : processMs(serverPid),
    postgresMs: postgresMs(),
    machineBusyMs: machine.busy,
    stealMs: machine.steal
  }
}

const combine = (a: CpuTime, b: CpuTime, sign: 1 | -1): CpuTime => ({
  wallMs: a.wallMs + sign * b.wallMs,
  selfMs: a.selfMs + sign * b.selfMs,
  serverMs: a.serverMs + sign * b.serverMs,
  postgresMs: a.postgresMs + sign * b.postgresMs,
  machineBusyMs: a.machineBusyMs + sign * b.machineBusyMs,
  stealMs: a.stealMs + sign * b.stealMs
})

/** The CPU time spent between two snapshots. */
export const between = (from: CpuTime, to: CpuTime): CpuTime => combine(to, from, -1)

/** Two spans of CPU time as one (measurements taken in several rounds). */
export const add = (a: CpuTime, b: CpuTime): CpuTime => combine(a, b, 1)

export const coresUsed = (time: CpuTime): CoresUsed => {
  const self = time.selfMs / time.wallMs
  const server = time.serverMs / time.wallMs
  const postgres = time.postgresMs / time.wallMs
  const machine = time.machineBusyMs / time.wallMs
  return {
    self,
    server,
    postgres,
    rest: Math.max(0, machine - self - server - postgres),
    steal: time.stealMs / time.wallMs
  }
}
