import Foundation

/// The validators of the bytes a path serves now: what goes into `ETag` and `Last-Modified`,
/// and what conditional requests are compared with.
package struct RepresentationValidators: Sendable, Equatable {
    /// The strong tag of the exact bytes served.
    package var entityTag: EntityTag
    /// When the served bytes last changed, as this server saw it, in whole seconds (the
    /// resolution of an HTTP date).
    package var lastModified: Date
    /// Whether `lastModified` identifies these bytes: false when the bytes before them were
    /// first served in the same second, so a client holding those could present the same date
    /// (RFC 9110, section 8.8.2.2: a date is a strong validator only when the server knows the
    /// representation did not change twice in that second).
    package var lastModifiedIsUnambiguous: Bool

    package init(entityTag: EntityTag, lastModified: Date, lastModifiedIsUnambiguous: Bool) {
        self.entityTag = entityTag
        self.lastModified = lastModified
        self.lastModifiedIsUnambiguous = lastModifiedIsUnambiguous
    }
}
