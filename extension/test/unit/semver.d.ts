// The part of semver's API the engines test uses (semver ships no types; @types/semver is not needed for two calls).
declare module 'semver' {
  export function satisfies(version: string, range: string, options?: { includePrerelease?: boolean }): boolean;
}
