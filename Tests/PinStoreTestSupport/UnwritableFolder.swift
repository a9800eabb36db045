import Foundation
import PinStore

/// A folder no one may write into for as long as this value is not restored: a full or
/// read-only output folder. The tests run as root, and root writes through permissions, so as
/// root the folder is made immutable (`chattr +i`, which stops root too); otherwise its mode
/// becomes 0555. ``restore()`` undoes it (call it in a `defer`).
package final class UnwritableFolder: Sendable {
    /// The folder.
    package let path: String
    private let asRoot: Bool

    package struct Failure: Error, CustomStringConvertible {
        package let description: String
    }

    package init(_ path: String) throws {
        self.path = path
        asRoot = FileStatus.effectiveUser == 0
        if asRoot {
            let chattr = try ChildProcess.runBlocking("/usr/bin/chattr", ["+i", path])
            guard chattr.status == 0 else { throw Failure(description: "chattr +i \(path) failed: \(chattr.stderr)") }
        } else {
            try FileManager.default.setAttributes([.posixPermissions: 0o555], ofItemAtPath: path)
        }
    }

    /// Makes the folder writable again.
    package func restore() {
        if asRoot {
            _ = try? ChildProcess.runBlocking("/usr/bin/chattr", ["-i", path])
        } else {
            try? FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: path)
        }
    }
}
