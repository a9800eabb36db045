import Foundation

/// What the vantage-point protocol needs of the place the vantage points share, and nothing
/// more: list names by prefix, read one object with a size bound, create one object only if its
/// name is free. The protocol (``Publisher``'s vantage-point round) talks to the medium through
/// this seam alone, so another medium is another conforming type, not a change to the protocol.
///
/// The medium is trusted for two things only (the model in "Publishing the list"):
/// - **availability**: an object it acknowledged creating stays readable, unchanged;
/// - **exclusive create**: ``createExclusively(_:contents:)`` succeeds for one writer of a name.
///
/// Everything read from it is untrusted input: any name may exist, any bytes may be in it, and
/// no time it reports is used. ``FolderMedium`` is the first implementation; an object store
/// with conditional writes (S3 `PutObject` with `If-None-Match: *`, GCS `ifGenerationMatch=0`)
/// or an etcd transaction comparing a key's `create_revision` with 0 meets the same contract.
package protocol PublicationMedium: Sendable {
    /// The names that begin with `prefix`, sorted, at most `limit` of them; `truncated` is true
    /// when the medium held more (the rest are not read).
    func names(withPrefix prefix: String, limit: Int) throws(PublisherError) -> (names: [String], truncated: Bool)

    /// The bytes of `name`, or nil when there is no such object. Throws
    /// ``PublisherError/Code/proposal`` when the object is larger than `maximumSize` (nothing
    /// past the bound is read) or is not a plain object (a link, a folder, a device).
    func read(_ name: String, maximumSize: Int) throws(PublisherError) -> Data?

    /// Creates `name` holding `contents`, complete or not at all; false when the name exists
    /// (whoever wrote it first wins, and the loser reads the winner's object).
    func createExclusively(_ name: String, contents: Data) throws(PublisherError) -> Bool
}

/// A medium in memory: the deterministic simulation's medium, and the reference for what a
/// medium must do.
package final class InMemoryMedium: PublicationMedium, @unchecked Sendable {
    private let lock = NSLock()
    private var objects: [String: Data] = [:]

    package init() {}

    package func names(withPrefix prefix: String, limit: Int) -> (names: [String], truncated: Bool) {
        let matching = lock.withLock { objects.keys.filter { $0.hasPrefix(prefix) } }.sorted()
        return (Array(matching.prefix(max(0, limit))), matching.count > limit)
    }

    package func read(_ name: String, maximumSize: Int) throws(PublisherError) -> Data? {
        guard let data = lock.withLock({ objects[name] }) else { return nil }
        guard data.count <= maximumSize else {
            throw PublisherError(.proposal, "\(name) is \(data.count) bytes, more than the \(maximumSize) a \(name.prefix { $0 != "-" }) may have; ignoring it.")
        }
        return data
    }

    package func createExclusively(_ name: String, contents: Data) -> Bool {
        lock.withLock {
            guard objects[name] == nil else { return false }
            objects[name] = contents
            return true
        }
    }

    /// Every object, for the simulation's checks.
    package var allObjects: [String: Data] { lock.withLock { objects } }
}
