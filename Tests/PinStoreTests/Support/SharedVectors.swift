import PinStoreTestSupport
import Testing

extension TestResources {
    /// The skip message of tests that need `../shared/vectors`.
    static var sharedVectorsMissing: Comment { Comment(rawValue: sharedVectorsMissingMessage) }
}
