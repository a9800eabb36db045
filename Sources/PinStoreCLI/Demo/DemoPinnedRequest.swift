import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import PinStore
import PinStoreNIO

/// What one pinned request in the demo came to.
enum DemoOutcome: Sendable {
    /// The connection passed chain validation and the pin check; the server answered.
    case allowed(status: Int, body: String)
    /// The connection was refused before any request byte was sent.
    case refused(reason: String)
}

/// The demo's pinned request: plain URLSession code on a session made with the documented
/// setup line, exactly what an app does.
enum DemoPinnedRequest {
    static func get(_ url: URL, store: PinStore, trustRoots: TrustRoots) async -> DemoOutcome {
        #if canImport(FoundationNetworking)
        let session = URLSession(configuration: .pinned(by: store, trustRoots: trustRoots))
        defer { session.finishTasksAndInvalidate() }
        do {
            let (data, response) = try await session.data(from: url)
            return .allowed(status: (response as? HTTPURLResponse)?.statusCode ?? 0, body: String(decoding: data, as: UTF8.self))
        } catch let error as URLError {
            let reason = (error.userInfo[NSUnderlyingErrorKey] as? PinningFailure).map(\.summary) ?? error.localizedDescription
            return .refused(reason: reason)
        } catch {
            return .refused(reason: "\(error)")
        }
        #else
        // On Apple platforms the demo would use PinningURLSessionDelegate; the demo targets Linux.
        return .refused(reason: "the demo's pinned transport is the Linux one")
        #endif
    }
}
