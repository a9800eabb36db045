import Foundation
import PinStore
import PinStoreSigning

/// Reading the files and values the commands take, with errors that name the file.
enum InputFiles {
    static func data(_ path: String, what: String) throws -> Data {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
            throw CLIError("\(what) \(path) does not exist")
        }
        guard !isDirectory.boolValue, let data = FileManager.default.contents(atPath: path) else {
            throw CLIError("cannot read \(what) \(path)")
        }
        return data
    }

    static func text(_ path: String, what: String) throws -> String {
        String(decoding: try data(path, what: what), as: UTF8.self)
    }

    /// A passphrase file's first line (a trailing newline is not part of the passphrase).
    static func passphrase(_ path: String?) throws -> String? {
        guard let path else { return nil }
        let text = try self.text(path, what: "passphrase file")
        let line = text.split(separator: "\n", maxSplits: 1, omittingEmptySubsequences: false).first.map(String.init) ?? ""
        let passphrase = line.hasSuffix("\r") ? String(line.dropLast()) : line
        guard !passphrase.isEmpty else {
            throw CLIError("the passphrase file \(path) is empty")
        }
        return passphrase
    }

    /// The signing key from a PEM file, decrypted with the passphrase file's passphrase if given.
    static func privateKey(_ path: String, passphraseFile: String?) throws -> P256PrivateKey {
        let pem = try text(path, what: "key file")
        do {
            return try P256PrivateKey(pem: pem, passphrase: try passphrase(passphraseFile))
        } catch let error as PinStoreError {
            throw CLIError("reading the key \(path)", error)
        }
    }

    /// A public key given inline (Base64 X9.63 point, Base64 DER SPKI, PEM) or as a path to a
    /// file holding one of those.
    static func publicKey(_ value: String) throws -> P256PublicKey {
        var text = value
        var source = "the --public-key value"
        if FileManager.default.fileExists(atPath: value) {
            text = try self.text(value, what: "public key file")
            source = value
            if let data = FileManager.default.contents(atPath: value), data.first == 0x30 {
                // A DER SubjectPublicKeyInfo file.
                do { return try P256PublicKey(derSubjectPublicKeyInfo: data) } catch {
                    throw CLIError("reading the public key \(source)", error)
                }
            }
        }
        do {
            return try P256PublicKey(configuredString: text.trimmingCharacters(in: .whitespacesAndNewlines))
        } catch {
            throw CLIError("reading the public key \(source)", error)
        }
    }

    /// Writes public `data` (a signed list) to `path` atomically. Secrets go through
    /// ``SecretFile`` instead, which never lets them exist with a wider mode.
    static func write(_ data: Data, to path: String) throws {
        let url = URL(fileURLWithPath: path)
        do {
            try data.write(to: url, options: .atomic)
        } catch {
            throw CLIError("cannot write \(path): \(error.localizedDescription)")
        }
    }
}

/// Unix times on the command line and in output.
enum UnixTime {
    /// `2099-12-31T23:59:59Z` for 4102444799.
    static func iso8601(_ seconds: Int64) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime]
        return formatter.string(from: Date(timeIntervalSince1970: TimeInterval(seconds)))
    }

    /// Parses Unix seconds (`4102444799`) or an ISO 8601 date-time (`2099-12-31T23:59:59Z`).
    static func parse(_ text: String, option: String) throws -> Int64 {
        if let seconds = Int64(text) {
            return seconds
        }
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime]
        if let date = formatter.date(from: text) {
            return Int64(date.timeIntervalSince1970)
        }
        throw CLIError("\(option) \"\(text)\" is neither Unix seconds nor an ISO 8601 time like 2099-12-31T23:59:59Z")
    }
}
