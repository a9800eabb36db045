import Foundation
import PinStore

/// Remembers, for one path, which bytes it served last and since when, so `Last-Modified`
/// moves only when the bytes do.
///
/// A server that reloads its file (`pinstore serve` after a re-sign, a `touch`, an atomic
/// rewrite with the same content) makes a new responder each time; they share one tracker, so
/// identical bytes keep their entity tag (it is their SHA-256) and their `Last-Modified`, and a
/// CDN or client holding them keeps getting `304`.
///
/// `Last-Modified` is the time, on ``clock``, at which the server first served the current
/// bytes, rounded down to the second, and never earlier than a date the server sent for bytes
/// served before them (a client echoing an old date can never be told its old bytes are
/// current). The response never sends it later than its `Date`, as RFC 9110 requires. When two versions
/// are first served within one second they would carry the same date, so that date is marked
/// ambiguous and `If-Modified-Since` alone no longer earns a `304` until the bytes change again
/// (an `If-None-Match` still does: entity tags never collide that way).
package final class RepresentationTracker: Sendable {
    /// The server's clock: `Last-Modified`, `Date` and the check that an `If-Modified-Since` is
    /// not in the future all read it. Tests pass a fixed one.
    package let clock: @Sendable () -> Date

    private let current = Locked<RepresentationValidators?>(nil)

    /// A tracker that has served nothing yet.
    package init(clock: @escaping @Sendable () -> Date = { Date() }) {
        self.clock = clock
    }

    /// The validators of the bytes tagged `entityTag`, about to be served at `now`: the same as
    /// last time when the tag is the same, otherwise new ones dated `now`.
    package func validators(servingBytesTagged entityTag: EntityTag, at now: Date) -> RepresentationValidators {
        let second = Date(timeIntervalSince1970: now.timeIntervalSince1970.rounded(.down))
        return current.withLock { current in
            if let previous = current {
                if previous.entityTag == entityTag {
                    return previous
                }
                // Never go back: a clock stepped backwards must not date these bytes before
                // bytes a client may already hold (the date is then ambiguous, see above).
                let lastModified = max(second, previous.lastModified)
                let next = RepresentationValidators(entityTag: entityTag, lastModified: lastModified,
                                                    lastModifiedIsUnambiguous: lastModified > previous.lastModified)
                current = next
                return next
            }
            let first = RepresentationValidators(entityTag: entityTag, lastModified: second, lastModifiedIsUnambiguous: true)
            current = first
            return first
        }
    }
}
