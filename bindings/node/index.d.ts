// SPDX-License-Identifier: MIT
// Type declarations of the npm package "idmint".

/** Errors thrown by idmint: `code` is the C error name, e.g. 'IDM_ECLOCKBACK'. */
export interface IdmintError extends Error {
  code:
    | 'IDM_EINVAL' | 'IDM_ENOMEM' | 'IDM_ELAYOUT' | 'IDM_EPARSE' | 'IDM_ERANGE'
    | 'IDM_ECLOCKBACK' | 'IDM_EEXHAUSTED' | 'IDM_ETIMEOVER' | 'IDM_EEPOCH' | 'IDM_EIO'
    | 'IDM_ECORRUPT' | 'IDM_ENOENT' | 'IDM_EBUSY' | 'IDM_ENODE' | 'IDM_ERANDOM'
    | 'IDM_EOVERFLOW' | 'IDM_ELEASE' | 'IDM_EEXIST' | 'IDM_ENOSEQ' | 'IDM_EUNAVAIL'
    | 'IDM_EFORKED';
}

/** An id: decimal (or 0x hex) text, a BigInt, or a Number up to 2^53-1. */
export type IdInput = string | bigint | number;
/** A point in time: a Date, Unix ms, or text ("2026-01-01", "2026-01-01T10:00:00Z", Unix ms). */
export type TimeInput = Date | number | string;

export interface LayoutOptions {
  /** A preset ("twitter", "discord", "instagram", "sonyflake"; default "twitter")
   *  or a text form such as "time:41@1ms,worker:10,seq:12" (which needs epoch). */
  layout?: string;
  /** Overrides the preset's epoch. */
  epoch?: TimeInput;
}

export interface GeneratorOptions extends LayoutOptions {
  /** Node values by field name, e.g. { datacenter: 1, worker: 7 }. With a
   *  lease, every node field but the leased one. */
  node?: Record<string, number | bigint | string>;
  /** Lease the worker id from a coordinator: file:///dir, etcd://..., etcds://...,
   *  zk://..., postgres://... (the CLI's URLs). */
  lease?: string;
  /** The node field(s) the lease fills (default "worker"; "datacenter+worker" for both). */
  leaseField?: string;
  /** Leased only: the claim and state files, so a restart resumes its claim. */
  stateDir?: string;
  /** Leased only: the lease's time to live (1000 to 3600000; default 10000). */
  ttlMs?: number;
  /** Leased only: claim another worker id after a loss (default true). */
  reclaim?: boolean;
  /** Leased only: the holder written into the record (default host:pid). */
  holder?: string;
  /** Not leased: a state file, so that a restart never reuses time. */
  state?: string;
  /** Start from the clock if the state file is missing or corrupt
   *  (default: true only if it does not exist). */
  stateFresh?: boolean;
  /** When the clock steps back (default "logical"; "change-worker" needs a lease). */
  backwards?: 'logical' | 'refuse' | 'wait' | 'change-worker';
  /** When a tick's sequence is used up (default "wait"). */
  exhaust?: 'wait' | 'borrow';
  maxDriftMs?: number;
  maxWaitMs?: number;
  stateLookaheadMs?: number;
}

export interface Decoded {
  /** The id as decimal text. */
  id: string;
  /** The start of the id's tick. */
  time: Date;
  unixMs: number;
  tick: number;
  sequence: number;
  /** Node fields by name (a BigInt only for a field wider than 53 bits). */
  fields: Record<string, number | bigint>;
}

export interface IdRange {
  /** The smallest id of the window, decimal. */
  min: string;
  /** The largest id of the window, decimal: WHERE id BETWEEN min AND max. */
  max: string;
}

export interface LayoutInfo {
  name: string;
  text: string;
  epoch: number;
  tickMs: number;
  /** The first Unix ms the time field cannot hold. */
  timeEnd: number;
  fields: { name: string; kind: 'time' | 'node' | 'seq'; bits: number; shift: number }[];
  /** Leased generators: the worker id held now, and re-claims so far. */
  leasedWorker?: number;
  reclaims?: number;
}

export interface GeneratorStats {
  refusedBackwards: number;
  refusedExhausted: number;
  waits: number;
  aheadMints: number;
  maxBackwardsMs: number;
  lastUnixMs: number;
  stateMarkMs: number;
  stateWrites: number;
  refusedLease: number;
}

export class Layout {
  constructor(opts?: LayoutOptions);
  decode(id: IdInput): Decoded;
  idToDate(id: IdInput): Date;
  /** The ids whose time lies in [from, to). */
  range(from: TimeInput, to: TimeInput): IdRange;
  info(): LayoutInfo;
}

/** A Snowflake generator: ids strictly increase, none repeats. Thread of
 *  its own process only: each process (cluster worker) creates its own, on
 *  its own worker id (a lease gives one). */
export class Generator {
  constructor(opts?: GeneratorOptions);
  /** The next id as decimal text (what JSON needs: Numbers lose bits above 2^53). */
  nextId(): string;
  nextBigInt(): bigint;
  /** n consecutive ids (1 to 1,000,000; all or nothing). */
  nextBatch(n: number): string[];
  nextBigIntBatch(n: number): bigint[];
  decode(id: IdInput): Decoded;
  idToDate(id: IdInput): Date;
  range(from: TimeInput, to: TimeInput): IdRange;
  info(): LayoutInfo;
  stats(): GeneratorStats;
  /** Store the state file's exact mark, release the lease. Idempotent. */
  close(): void;
}

export function createGenerator(opts?: GeneratorOptions): Generator;
/** The preset layouts' names. */
export function layouts(): string[];
export function decode(id: IdInput, opts?: LayoutOptions): Decoded;
export function idToDate(id: IdInput, opts?: LayoutOptions): Date;
export function range(from: TimeInput, to: TimeInput, opts?: LayoutOptions): IdRange;

/** A UUIDv7 (RFC 9562), lower case; strictly increasing within the process. */
export function uuidv7(): string;
export function uuidv4(): string;
/** A ULID, upper case; monotonic within the process. */
export function ulid(): string;
/** A MongoDB ObjectId, 24 lower-case hex digits. */
export function objectId(): string;
export function parseUuid(text: string): {
  version: number; variant: number; bytes: Buffer; unixMs: number | null; time: Date | null;
};
export function parseUlid(text: string): { unixMs: number; time: Date; bytes: Buffer; uuid: string };
export function parseObjectId(text: string): { unixMs: number; time: Date; bytes: Buffer };
/** The time of a UUIDv7 (IDM_EINVAL for other versions). */
export function uuidToDate(text: string): Date;
export function ulidToDate(text: string): Date;
export function objectIdToDate(text: string): Date;
/** The ULID's 128 bits in UUID text form. */
export function ulidToUuid(text: string): string;

export interface SequenceOptions {
  name: string;
  /** Ticket stores: sqlite:///path/file.db, postgres://...; store k of n hands out ids = k mod n. */
  stores: string | string[];
  /** A record of how far each store has gone, so a rewound store is refused. */
  floorFile?: string;
  /** Create the sequence first if it does not exist (first id: start). */
  create?: boolean;
  start?: number;
  minBlock?: number;
  maxBlock?: number;
  waitMs?: number;
}

export interface SequenceStats {
  ids: number; fetches: number; fetchErrors: number; waits: number;
  block: number; left: number; lastError: string; lastDetail: string;
}

/** Dense ids from ticket stores, taken in blocks (a crash leaves a gap, never a repeat). */
export class Sequence {
  constructor(opts: SequenceOptions);
  next(): string;
  nextBigInt(): bigint;
  stats(): SequenceStats;
  close(): void;
}

export function openSequence(opts: SequenceOptions): Sequence;
/** Create a sequence in every store; false if it existed already. */
export function createSequence(name: string, opts: { stores: string | string[]; start?: number }): boolean;
