import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { PasskeyStore } from "@taskmeter/kernel"
import type { Ids } from "@taskmeter/kernel"
import * as Failures from "./Failures.ts"

type Int8 = bigint | number | string

interface PasskeyRow {
  readonly credential_id: string
  readonly user_id: string
  readonly name: string
  readonly public_key: Uint8Array
  readonly counter: Int8
  readonly transports: ReadonlyArray<string>
  readonly created_at: Date
  readonly last_used_at: Date | null
}

interface ChallengeRow {
  readonly hash: string
  readonly purpose: PasskeyStore.ChallengePurpose
  readonly user_id: string | null
  readonly created_at: Date
  readonly expires_at: Date
}

const toPasskey = (row: PasskeyRow): PasskeyStore.Passkey => ({
  credentialId: row.credential_id,
  userId: row.user_id as Ids.UserId,
  name: row.name,
  publicKey: new Uint8Array(row.public_key),
  counter: Number(row.counter),
  transports: row.transports,
  createdAt: row.created_at,
  lastUsedAt: row.last_used_at
})

const passkeyColumns = "credential_id, user_id, name, public_key, counter, transports, created_at, last_used_at"

export const make = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient

  return PasskeyStore.PasskeyStore.of({
    insertPasskey: (passkey) =>
      Failures.run(
        "insertPasskey",
        sql`INSERT INTO passkeys (credential_id, user_id, name, public_key, counter, transports, created_at, last_used_at)
          VALUES (${passkey.credentialId}, ${passkey.userId}, ${passkey.name}, ${passkey.publicKey}, ${passkey.counter},
            ${passkey.transports as Array<string>}::text[], ${passkey.createdAt}, ${passkey.lastUsedAt}::timestamptz)
          ON CONFLICT (credential_id) DO NOTHING
          RETURNING credential_id`.pipe(Effect.map((rows) => rows.length > 0))
      ),

    listPasskeys: (userId) =>
      Failures.run(
        "listPasskeys",
        sql<PasskeyRow>`SELECT ${sql.literal(passkeyColumns)} FROM passkeys WHERE user_id = ${userId}
          ORDER BY created_at, credential_id`.pipe(Effect.map((rows) => rows.map(toPasskey)))
      ),

    findPasskey: (credentialId) =>
      Failures.run(
        "findPasskey",
        sql<PasskeyRow>`SELECT ${sql.literal(passkeyColumns)} FROM passkeys WHERE credential_id = ${credentialId}`.pipe(
          Effect.map((rows) => (rows[0] === undefined ? undefined : toPasskey(rows[0])))
        )
      ),

    deletePasskey: (userId, credentialId) =>
      Failures.run(
        "deletePasskey",
        sql`DELETE FROM passkeys WHERE credential_id = ${credentialId} AND user_id = ${userId} RETURNING credential_id`.pipe(
          Effect.map((rows) => rows.length > 0)
        )
      ),

    recordUse: (credentialId, counter, at) =>
      Failures.run(
        "recordUse",
        Effect.asVoid(sql`UPDATE passkeys SET counter = greatest(counter, ${counter}), last_used_at = ${at}
          WHERE credential_id = ${credentialId}`)
      ),

    insertChallenge: (challenge) =>
      Failures.run(
        "insertChallenge",
        Effect.asVoid(sql`INSERT INTO passkey_challenges (hash, purpose, user_id, created_at, expires_at)
          VALUES (${challenge.hash}, ${challenge.purpose}, ${challenge.userId}::text, ${challenge.createdAt},
            ${challenge.expiresAt})`)
      ),

    consumeChallenge: (hash, purpose, now) =>
      Failures.run(
        "consumeChallenge",
        sql<ChallengeRow>`UPDATE passkey_challenges SET used_at = ${now}
          WHERE hash = ${hash} AND purpose = ${purpose} AND used_at IS NULL AND expires_at > ${now}
          RETURNING hash, purpose, user_id, created_at, expires_at`.pipe(
          Effect.map((rows) => {
            const row = rows[0]
            return row === undefined
              ? undefined
              : {
                  hash: row.hash,
                  purpose: row.purpose,
                  userId: row.user_id as Ids.UserId | null,
                  createdAt: row.created_at,
                  expiresAt: row.expires_at
                }
          })
        )
      )
  })
})
