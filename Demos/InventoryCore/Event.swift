import Foundation

/// Parses one line of the service's input into an action.
///
/// The input is JSON Lines, one event per line:
///
/// ```json
/// {"event": "restock", "item": "apple", "quantity": 10}
/// {"event": "order", "id": "o-1", "item": "apple", "quantity": 3}
/// {"event": "cancel", "id": "o-1"}
/// ```
public enum Event {
    /// The largest quantity one event may carry.
    public static let maximumQuantity = 1_000_000_000
    /// The most characters an item name or an order id may have.
    public static let maximumNameLength = 100

    /// Why a line is not an event: a sentence for the operator, without the line number.
    public struct Problem: Error, Equatable, CustomStringConvertible {
        /// The sentence.
        public let description: String

        /// Creates a problem described by `description`.
        public init(_ description: String) {
            self.description = description
        }
    }

    private struct Fields: Decodable {
        let event: String
        let id: String?
        let item: String?
        /// Read as a decimal number of any size (a fraction or a number beyond `Int` would otherwise
        /// fail as "not valid JSON"), then checked to be whole and in range, and echoed as written.
        let quantity: Decimal?
    }

    /// The action a line describes.
    ///
    /// - Parameter line: One line of input, without its newline.
    /// - Returns: The action.
    /// - Throws: ``Problem`` saying what is wrong with the line.
    public static func parse(_ line: String) throws(Problem) -> InventoryAction {
        let fields: Fields
        do {
            fields = try JSONDecoder().decode(Fields.self, from: Data(line.utf8))
        } catch {
            throw Problem(describe(error))
        }
        switch fields.event {
        case "restock":
            return .restock(item: try item(fields), quantity: try quantity(fields))
        case "order":
            return .order(id: try id(fields), item: try item(fields), quantity: try quantity(fields))
        case "cancel":
            return .cancel(id: try id(fields))
        default:
            throw Problem("unknown event \"\(fields.event)\" (expected restock, order or cancel)")
        }
    }

    private static func item(_ fields: Fields) throws(Problem) -> String {
        guard let item = fields.item?.trimmingCharacters(in: .whitespaces), !item.isEmpty else {
            throw Problem("\(fields.event) needs a non-empty \"item\"")
        }
        try checkName(item, key: "item")
        return item
    }

    private static func id(_ fields: Fields) throws(Problem) -> String {
        guard let id = fields.id?.trimmingCharacters(in: .whitespaces), !id.isEmpty else {
            throw Problem("\(fields.event) needs a non-empty \"id\"")
        }
        try checkName(id, key: "id")
        return id
    }

    /// Refuses names too long to show in a log line, and control characters, which would reach the
    /// operator's terminal (an escape sequence, a line break in a log line).
    private static func checkName(_ name: String, key: String) throws(Problem) {
        guard name.count <= maximumNameLength else {
            throw Problem("\"\(key)\" must be at most \(maximumNameLength) characters long, not \(name.count)")
        }
        guard !name.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) else {
            throw Problem("\"\(key)\" must not contain control characters")
        }
    }

    private static func quantity(_ fields: Fields) throws(Problem) -> Int {
        guard let quantity = fields.quantity else {
            throw Problem("\(fields.event) needs a \"quantity\"")
        }
        // The decimal's description is the number as a person writes it: 2.5, 9223372036854775807.
        let written = "\(quantity)"
        guard !written.contains(".") else {
            throw Problem("\"quantity\" must be a whole number, not \(written)")
        }
        guard let whole = Int(written), whole >= 1 && whole <= maximumQuantity else {
            let shown = written.count <= 24 ? written : "a number of \(written.count) digits"
            throw Problem("\"quantity\" must be between 1 and \(maximumQuantity), not \(shown)")
        }
        return whole
    }

    private static func describe(_ error: any Error) -> String {
        switch error {
        case DecodingError.keyNotFound(let key, _):
            return "missing \"\(key.stringValue)\""
        case DecodingError.typeMismatch(_, let context), DecodingError.valueNotFound(_, let context):
            guard let key = context.codingPath.last?.stringValue else { return "not a JSON object" }
            return key == "quantity" ? "\"quantity\" must be a whole number" : "\"\(key)\" must be a string"
        case DecodingError.dataCorrupted(let context):
            if let key = context.codingPath.last?.stringValue {
                return key == "quantity" ? "\"quantity\" must be a whole number" : "\"\(key)\" is not valid"
            }
            return "not valid JSON"
        default:
            return "not valid JSON"
        }
    }
}
