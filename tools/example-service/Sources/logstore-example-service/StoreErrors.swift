import Hummingbird
import LogStore
import LogStorePostgres

/// Turns the store's typed errors into HTTP statuses, so that a client can tell "try again" from
/// "your request is wrong" from "we are broken":
///
/// | error code | status |
/// | --- | --- |
/// | `.serverUnavailable`, `.statementTimeout`, `.writeConflict`, `.notOpen` | 503, `Retry-After: 1`: nothing was committed, the same request may succeed in a moment |
/// | `.commitOutcomeUnknown` | 503, `Retry-After: 1`, the body naming the code: it may have committed; look before repeating a non-idempotent request |
/// | `.uniqueConstraintViolation`, `.mergeConflict` | 409 |
/// | `.invalidArgument`, `.itemTooLarge`, `.keyTooLarge` | 400 |
/// | anything else | 500 (logged) |
///
/// The body names the code only (`store error: commitOutcomeUnknown`): messages stay in the
/// server's log (they can name the database).
struct StoreErrorMiddleware<Context: RequestContext>: RouterMiddleware {
    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        do {
            return try await next(request, context)
        } catch let error as LogStoreError {
            var headers: HTTPFields = [:]
            let status: HTTPResponse.Status
            switch error.code {
            case .serverUnavailable, .statementTimeout, .writeConflict, .notOpen, .commitOutcomeUnknown:
                status = .serviceUnavailable
                headers[.retryAfter] = "1"
            case .uniqueConstraintViolation, .mergeConflict:
                status = .conflict
            case .invalidArgument, .itemTooLarge, .keyTooLarge:
                status = .badRequest
            default:
                context.logger.error("store failure: \(error)")
                status = .internalServerError
            }
            throw HTTPError(status, headers: headers, message: "store error: \(error.code.rawValue)")
        }
    }
}
