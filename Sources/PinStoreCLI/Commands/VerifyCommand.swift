import ArgumentParser
import Foundation
import PinStore

/// `pinstore verify`: checks a list as apps will, entry by entry.
struct VerifyCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "verify",
        abstract: "Check a static list or a challenge-mode response against a public key.",
        discussion: """
            Prints each entry with its status (valid, expired, bad signature) and exits with \
            status 1 if any entry is not valid, if the list holds no entry, or if apps would \
            refuse the list. In static mode every entry carries its own signature; with \
            --challenge and --signature the file is a challenge-mode response body and the \
            X-Cert-Pinning-Signature value covers challenge & body.

            --public-key takes the Base64 X9.63 point apps configure, a PEM or Base64 DER \
            SubjectPublicKeyInfo, or a file holding one of those. --now evaluates expiry as of \
            another time (Unix seconds or ISO 8601), e.g. to check an archived list.

            With a key set (several --public-key and --threshold, or --keys with a key document \
            file, whose newest set is used after the whole chain verifies) the list must carry \
            whole-list signatures by that many distinct keys; its version and expires are shown \
            and an expired list fails.

            --warn-days N (for CI): when everything is valid, exit with status 2 if a pin (or the \
            list itself) expires within N days, listing each one: fail the build before the \
            certificate does.

            Examples:
              pinstore verify list.json --public-key BC3kV9OIDnMu...Nv+XE=
              pinstore verify list.json --public-key list-signing.pub.pem --warn-days 30
              pinstore verify list.json --public-key a.pub.pem --public-key b.pub.pem --public-key c.pub.pem --threshold 2
              pinstore verify list.json --keys keys.json
              pinstore verify list.json --public-key list-signing.pub.pem --now 1704067200
              pinstore verify body.json --public-key key.b64 --challenge AAECAwQFBgcICQoLDA0ODw== --signature MEUCIQ...
            """
    )

    @Argument(help: "The list file (static list, or challenge-mode response body).")
    var list: String

    @Option(help: "The public key apps configure, inline or as a file; repeat for a key set.")
    var publicKey: [String] = []

    @Option(help: "Key sets: how many distinct keys must have signed the list.")
    var threshold: Int = 1

    @Option(help: "A key document file: verify its chain and check the list against its newest key set.")
    var keys: String?

    @Option(help: "Challenge mode: the X-Cert-Pinning-Challenge value the response answers.")
    var challenge: String?

    @Option(help: "Challenge mode: the X-Cert-Pinning-Signature value of the response.")
    var signature: String?

    @Option(help: "Evaluate expiry as of this time (Unix seconds or ISO 8601; default: now).")
    var now: String?

    @Option(help: "Exit with status 2 when a pin or the list expires within this many days.")
    var warnDays: Int?

    func validate() throws {
        if publicKey.isEmpty, keys == nil {
            throw ValidationError("Give --public-key, or --keys with a key document file.")
        }
        if keys != nil || publicKey.count > 1 || threshold > 1, challenge != nil {
            throw ValidationError("Key sets are checked on static lists here; check challenge-mode responses with one --public-key.")
        }
        if (challenge == nil) != (signature == nil) {
            throw ValidationError("--challenge and --signature go together (challenge mode).")
        }
        if let warnDays, !(0...36_500).contains(warnDays) {
            throw ValidationError("--warn-days takes 0 to 36500 days.")
        }
    }

    /// `--warn-days`: lists what expires within the window after `asOf`; status 2 when anything does.
    private func warnAboutExpiries(_ entries: [FingerprintEntry], listExpires: Int64?, asOf: Int64, body: Data) throws {
        let ctStale = try certificateTransparencySummary(body)
        guard let warnDays else { return }
        let horizon = asOf + Int64(warnDays) * 86_400
        var soon = entries.filter { $0.expires <= horizon }.map { ("\($0.name) (\($0.fingerprint.base64EncodedString()))", $0.expires) }
        if let listExpires, listExpires <= horizon { soon.append(("the list itself", listExpires)) }
        if let ctStale, ctStale <= horizon {
            soon.append(("the Certificate Transparency log list goes stale (stores then fail open)", ctStale))
        }
        guard !soon.isEmpty else {
            Console.print("nothing expires within \(warnDays) day\(warnDays == 1 ? "" : "s")")
            return
        }
        for (what, expires) in soon.sorted(by: { $0.1 < $1.1 }) {
            let days = Double(expires - asOf) / 86_400
            Console.printError("expires in \(String(format: "%.1f", days)) days, at \(UnixTime.iso8601(expires)): \(what)")
        }
        Console.printError("\(soon.count) expir\(soon.count == 1 ? "y" : "ies") within \(warnDays) day\(warnDays == 1 ? "" : "s"): publish renewed pins")
        throw ExitCode(2)
    }

    /// Prints the list's CT section, if any; returns when its log list goes stale (70 days
    /// after its timestamp).
    private func certificateTransparencySummary(_ body: Data) throws -> Int64? {
        let summary: (timestamp: Int64, logs: Int, profile: String?)?
        do {
            summary = try CertificateTransparencyTools.summary(ofList: body)
        } catch {
            throw CLIError("\(list): stores would refuse its certificateTransparency section", error)
        }
        guard let summary else { return nil }
        let stale = summary.timestamp + 70 * 86_400
        Console.print("certificate transparency: \(summary.logs) log\(summary.logs == 1 ? "" : "s"), profile \(summary.profile ?? "per store (chrome by default)"), log list of \(UnixTime.iso8601(summary.timestamp)), stale from \(UnixTime.iso8601(stale))")
        return stale
    }

    func run() async throws {
        let body = try InputFiles.data(list, what: "list file")
        let asOf = try now.map { try UnixTime.parse($0, option: "--now") } ?? Int64(Date().timeIntervalSince1970)
        let date = Date(timeIntervalSince1970: TimeInterval(asOf))
        if keys != nil || publicKey.count > 1 || threshold > 1 {
            try verifyWithKeySet(body, asOf: asOf)
            return
        }
        let key = try InputFiles.publicKey(publicKey[0])

        var rows: [(status: String, entry: FingerprintEntry)] = []
        var libraryVerdict: String?
        if let challenge, let signature {
            let parsed: ListReadBack.List
            do {
                parsed = try ListReadBack.verifyChallengeResponse(body, challenge: challenge, signatureHeader: signature, publicKey: key)
            } catch {
                throw CLIError("\(list): refused", error)
            }
            Console.print("\(list): challenge-mode response, signature valid for challenge \(challenge)")
            if let timestamp = parsed.timestamp {
                Console.print("timestamp: \(UnixTime.iso8601(timestamp)) (\(timestamp))")
            }
            rows = parsed.entries.map { ($0.entry.isValid(at: date) ? "valid" : "expired", $0.entry) }
        } else {
            let parsed: ListReadBack.List
            do {
                parsed = try ListReadBack.parse(body)
            } catch {
                throw CLIError("\(list): not a fingerprint list apps accept", error)
            }
            Console.print("\(list): static list, \(parsed.entries.count) entr\(parsed.entries.count == 1 ? "y" : "ies")")
            do {
                if let timestamp = try ListReadBack.wholeListSignatureTimestamp(body, publicKey: key) {
                    Console.print("whole-list signature: valid, timestamp \(UnixTime.iso8601(timestamp)) (\(timestamp))")
                } else {
                    Console.print("whole-list signature: none (replay, splicing and depth changes cannot be detected; stores with requireListSignature refuse this list)")
                }
            } catch {
                Console.print("whole-list signature: INVALID")
                libraryVerdict = error.reason
            }
            rows = parsed.entries.map { signed in
                let status: String
                if !ListReadBack.entrySignatureIsValid(signed.signature, for: signed.entry, publicKey: key) {
                    status = signed.signature == nil ? "no signature" : "bad signature"
                } else {
                    status = signed.entry.isValid(at: date) ? "valid" : "expired"
                }
                return (status, signed.entry)
            }
            do {
                _ = try FingerprintList.verifiedEntries(staticList: body, publicKey: key)
            } catch {
                libraryVerdict = error.reason
            }
        }
        printTable(rows, asOf: asOf)
        let failures = rows.filter { $0.status != "valid" }.count
        if let libraryVerdict {
            Console.printError("apps would refuse this list: \(libraryVerdict)")
        }
        if rows.isEmpty {
            Console.printError("the list holds no entry: apps would report storeIsEmpty")
            throw ExitCode.failure
        }
        if failures > 0 {
            Console.printError("\(failures) of \(rows.count) entr\(rows.count == 1 ? "y is" : "ies are") not valid as of \(UnixTime.iso8601(asOf))")
            throw ExitCode.failure
        }
        if libraryVerdict != nil {
            throw ExitCode.failure
        }
        Console.print("all \(rows.count) entr\(rows.count == 1 ? "y" : "ies") valid as of \(UnixTime.iso8601(asOf))")
        try warnAboutExpiries(rows.map(\.entry), listExpires: nil, asOf: asOf, body: body)
    }

    /// A static list against a key set, as a store with that set verifies it.
    private func verifyWithKeySet(_ body: Data, asOf: Int64) throws {
        let date = Date(timeIntervalSince1970: TimeInterval(asOf))
        var setKeys = try publicKey.map(InputFiles.publicKey)
        var setThreshold = threshold
        if let keys {
            let file = try InputFiles.data(keys, what: "key document file")
            do {
                let newest = try KeyDocumentTools.newestKeys(file, now: date)
                setKeys = newest.keys
                setThreshold = newest.threshold
                Console.print("\(keys): key set version \(newest.version), threshold \(newest.threshold) of \(newest.keys.count)")
            } catch {
                throw CLIError("\(keys): stores would refuse these key documents", error)
            }
        }
        let verified: (entries: [FingerprintEntry], version: Int64?, expires: Int64?, timestamp: Int64?)
        do {
            verified = try KeyDocumentTools.verifyStaticList(body, keys: setKeys, threshold: setThreshold)
        } catch {
            throw CLIError("\(list): refused", error)
        }
        Console.print("\(list): static list, \(verified.entries.count) entr\(verified.entries.count == 1 ? "y" : "ies"), signed by at least \(setThreshold) of \(setKeys.count) keys")
        Console.print("version: \(verified.version.map(String.init) ?? "none")")
        if let expires = verified.expires {
            Console.print("list expires: \(UnixTime.iso8601(expires)) (\(expires))")
        }
        let rows = verified.entries.map { ($0.isValid(at: date) ? "valid" : "expired", $0) }
        printTable(rows, asOf: asOf)
        if let expires = verified.expires, asOf >= expires {
            Console.printError("the list expired at \(UnixTime.iso8601(expires)): stores refuse it")
            throw ExitCode.failure
        }
        if rows.isEmpty || rows.contains(where: { $0.0 != "valid" }) {
            Console.printError("not every entry is valid as of \(UnixTime.iso8601(asOf))")
            throw ExitCode.failure
        }
        Console.print("all \(rows.count) entr\(rows.count == 1 ? "y" : "ies") valid as of \(UnixTime.iso8601(asOf))")
        try warnAboutExpiries(verified.entries, listExpires: verified.expires, asOf: asOf, body: body)
    }

    private func printTable(_ rows: [(status: String, entry: FingerprintEntry)], asOf: Int64) {
        let nameWidth = max(4, rows.map(\.entry.name.count).max() ?? 0)
        func pad(_ text: String, _ width: Int) -> String {
            text + String(repeating: " ", count: max(0, width - text.count))
        }
        Console.print("\(pad("STATUS", 13))  \(pad("NAME", nameWidth))  \(pad("EXPIRES", 33))  FINGERPRINT")
        for row in rows {
            var expires = "\(UnixTime.iso8601(row.entry.expires)) (\(row.entry.expires))"
            if row.entry.depth != 0 { expires += " d\(row.entry.depth)" }
            Console.print("\(pad(row.status, 13))  \(pad(row.entry.name, nameWidth))  \(pad(expires, 33))  \(row.entry.fingerprint.base64EncodedString())")
        }
    }
}
