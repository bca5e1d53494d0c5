public import Foundation

/// One tab of a ``HeadlessBrowser``: navigate, evaluate, press keys, click, and read what the page
/// asked for and wrote to its console.
public final class BrowserPage: @unchecked Sendable {
    // @unchecked: immutable; the browser it talks through is thread-safe.
    private let browser: HeadlessBrowser
    /// The page's DevTools session.
    public let session: String

    init(browser: HeadlessBrowser, session: String) {
        self.browser = browser
        self.session = session
    }

    /// Opens `url` and waits for its load event.
    ///
    /// - Parameter url: The address, such as `file:///tmp/page.html#tx=12`.
    /// - Throws: ``HeadlessBrowser/Failure`` when it does not load in time.
    public func navigate(to url: String) throws {
        let start = browser.events(for: session).count
        let reply = try browser.send("Page.navigate", ["url": url], session: session)
        if let error = reply["errorText"] as? String { throw HeadlessBrowser.Failure("\(url): \(error)") }
        guard
            browser.waitForEvent(
                "Page.loadEventFired",
                session: session,
                after: start,
                timeout: HeadlessBrowser.timeout
            )
                != nil
        else { throw HeadlessBrowser.Failure("\(url) did not load within \(Int(HeadlessBrowser.timeout)) s") }
    }

    /// Evaluates `expression` in the page and returns its value (JSON-like: strings, numbers,
    /// booleans, arrays, dictionaries, `nil` for `null` and `undefined`).
    ///
    /// - Parameters:
    ///   - expression: JavaScript.
    ///   - awaitPromise: Whether to wait for the promise it returns.
    /// - Returns: The value.
    /// - Throws: ``HeadlessBrowser/Failure`` with the exception it threw.
    @discardableResult
    public func evaluate(_ expression: String, awaitPromise: Bool = false) throws -> Any? {
        let result = try browser.send(
            "Runtime.evaluate",
            ["expression": expression, "returnByValue": true, "awaitPromise": awaitPromise],
            session: session
        )
        if let details = result["exceptionDetails"] as? [String: Any] {
            let exception = (details["exception"] as? [String: Any])?["description"] ?? details["text"] ?? details
            throw HeadlessBrowser.Failure("\(expression.prefix(80)) threw \(exception)")
        }
        return (result["result"] as? [String: Any])?["value"]
    }

    /// Evaluates `expression` and returns it as a string (`""` for anything else).
    public func string(_ expression: String) throws -> String {
        try evaluate(expression) as? String ?? ""
    }

    /// Waits, inside the page, until `condition` (a JavaScript expression) is true: checked every
    /// few milliseconds, for at most `seconds`.
    ///
    /// - Returns: Whether it became true in time.
    public func waitUntil(_ condition: String, seconds: Double = HeadlessBrowser.timeout / 2) throws -> Bool {
        let script = """
            new Promise(resolve => {
              const deadline = performance.now() + \(Int(seconds * 1_000));
              const check = () => {
                let value = false;
                try { value = Boolean(\(condition)); } catch (error) { value = false; }
                if (value) resolve(true);
                else if (performance.now() > deadline) resolve(false);
                else setTimeout(check, 5);
              };
              check();
            })
            """
        return try evaluate(script, awaitPromise: true) as? Bool ?? false
    }

    /// Presses and releases a key, as a keyboard would: `j`, `k`, `ArrowDown`, `ArrowUp`, `Enter`,
    /// `Escape`.
    public func press(_ key: String) throws {
        let named: [String: (code: String, keyCode: Int)] = [
            "ArrowDown": ("ArrowDown", 40), "ArrowUp": ("ArrowUp", 38), "Enter": ("Enter", 13),
            "Escape": ("Escape", 27), "Tab": ("Tab", 9),
        ]
        var parameters: [String: Any] = ["key": key]
        if let (code, keyCode) = named[key] {
            parameters["code"] = code
            parameters["windowsVirtualKeyCode"] = keyCode
        } else if let scalar = key.unicodeScalars.first, key.unicodeScalars.count == 1 {
            parameters["code"] = scalar.properties.isAlphabetic ? "Key\(key.uppercased())" : ""
            parameters["windowsVirtualKeyCode"] = Int(key.uppercased().unicodeScalars.first!.value)
            parameters["text"] = key
        }
        var down = parameters
        down["type"] = parameters["text"] == nil ? "rawKeyDown" : "keyDown"
        try browser.send("Input.dispatchKeyEvent", down, session: session)
        var up = parameters
        up["type"] = "keyUp"
        up["text"] = nil
        try browser.send("Input.dispatchKeyEvent", up, session: session)
    }

    /// Types `text` into the focused element, as one input.
    public func insertText(_ text: String) throws {
        try browser.send("Input.insertText", ["text": text], session: session)
    }

    /// Clicks at a point of the page, in CSS pixels from its top left corner.
    public func click(x: Double, y: Double) throws {
        for type in ["mousePressed", "mouseReleased"] {
            try browser.send(
                "Input.dispatchMouseEvent",
                ["type": type, "x": x, "y": y, "button": "left", "clickCount": 1],
                session: session
            )
        }
    }

    /// Clicks the middle of the first element that `selector` finds.
    ///
    /// - Throws: ``HeadlessBrowser/Failure`` when nothing matches it.
    public func click(_ selector: String) throws {
        let escaped = String(data: try JSONSerialization.data(withJSONObject: [selector]), encoding: .utf8)!
        let box =
            try evaluate(
                """
                (() => {
                  const target = document.querySelector(\(escaped)[0]);
                  if (!target) return null;
                  target.scrollIntoView({ block: 'nearest' });
                  const box = target.getBoundingClientRect();
                  return [box.left + box.width / 2, box.top + box.height / 2];
                })()
                """
            ) as? [Double]
        guard let box, box.count == 2 else { throw HeadlessBrowser.Failure("nothing matches \(selector)") }
        try click(x: box[0], y: box[1])
    }

    /// A PNG of what the page shows.
    public func screenshot() throws -> Data {
        let result = try browser.send("Page.captureScreenshot", ["format": "png"], session: session)
        guard let text = result["data"] as? String, let data = Data(base64Encoded: text) else {
            throw HeadlessBrowser.Failure("no screenshot data")
        }
        return data
    }

    // MARK: What the page did

    /// The addresses of every request the page made, its own document included.
    public var requests: [String] {
        browser.events(for: session).compactMap { event in
            guard event["method"] as? String == "Network.requestWillBeSent",
                let parameters = event["params"] as? [String: Any],
                let request = parameters["request"] as? [String: Any]
            else { return nil }
            return request["url"] as? String
        }
    }

    /// Every console message (from the page's script and from the browser about the page) at
    /// level `error` or `warning`, and every uncaught exception, as lines.
    public var problems: [String] {
        browser.events(for: session).compactMap { event in
            let parameters = event["params"] as? [String: Any] ?? [:]
            switch event["method"] as? String {
            case "Runtime.exceptionThrown":
                let details = parameters["exceptionDetails"] as? [String: Any] ?? [:]
                return "exception: \((details["exception"] as? [String: Any])?["description"] ?? details["text"] ?? "")"
            case "Runtime.consoleAPICalled":
                let type = parameters["type"] as? String ?? ""
                guard type == "error" || type == "warning" || type == "assert" else { return nil }
                let arguments = parameters["args"] as? [[String: Any]] ?? []
                return "console.\(type): "
                    + arguments.map { "\($0["value"] ?? $0["description"] ?? "")" }.joined(separator: " ")
            case "Log.entryAdded":
                let entry = parameters["entry"] as? [String: Any] ?? [:]
                let level = entry["level"] as? String ?? ""
                guard level == "error" || level == "warning" else { return nil }
                return "log.\(level): \(entry["text"] ?? "") \(entry["url"] ?? "")"
            default:
                return nil
            }
        }
    }

    /// Closes the tab.
    public func close() throws {
        try browser.send("Page.close", session: session)
    }
}
