"""24 task families in 12 confusable sibling pairs.

Each family: a hidden rule, the agent's tools, a task type, three training trajectories that break
the rule and recover (the third one explores a wrong alternative first), sometimes one that fails
outright, and five new test tasks worded as a user would, with new literal values.

Siblings live in the same neighbourhood (same domain, often the same tool, sometimes the same
error class) but need a different fix. ``fix.names`` says what "the advice names the fix" means:
regexes that must all match inside one advice item (tool names for preconditions, orders and
tool choices; the parameter and its value pattern for parameters).
"""
from __future__ import annotations

from .schema import Action, Fail, Family, Run, Task, V, err, ok

A = Action


# --------------------------------------------------------------------------------------------
# 1. travel: confirm the location first
# --------------------------------------------------------------------------------------------
_NO_CITY = "MissingParameter: 'city' is required"

WEATHER_CITY = Family(
    id="weather-city",
    sibling="flight-airport",
    domain="travel",
    kind="precondition",
    rule="get_weather needs an explicit city and there is no default: ask the user which city first.",
    task_type="query",
    tools=("get_weather", "ask_user", "get_local_time"),
    naive=lambda v: [err("get_weather", {"date": v.date}, _NO_CITY)],
    fix=A(
        "ask the user for the city, then get_weather",
        lambda v: [
            ok("ask_user", {"question": "Which city should I check the weather for?"}, v.city),
            ok("get_weather", {"city": v.city, "date": v.date}, {"summary": v.fc}),
        ],
        names=(r"ask_user|ask (the user|them|which)\b.{0,30}(city|location|where)|confirm the (city|location)",
               r"get_weather|weather"),
    ),
    wrong=(
        A("use the caller's current location",
          lambda v: [err("get_weather", {"date": v.date, "location": "auto"}, _NO_CITY)],
          names=(r"get_weather", r"current location|location.{0,12}\bauto\b|geolocat|ip address")),
        A("derive the place from the local time zone",
          lambda v: [ok("get_local_time", {}, {"timezone": "UTC", "time": "09:12"}),
                     err("get_weather", {"date": v.date, "timezone": "UTC"}, _NO_CITY)],
          names=(r"get_local_time",)),
        A("retry with a placeholder city",
          lambda v: [err("get_weather", {"date": v.date, "city": "here"}, "UnknownCity: no city named 'here'")],
          names=(r"get_weather", r"placeholder|city.{0,20}\bhere\b")),
    ),
    train=(
        Run("Will it rain tomorrow?", V(date="2024-05-12", city="Lyon", fc="rain, 14°C")),
        Run("what's the weather going to be like on saturday", V(date="2024-06-08", city="Porto", fc="sunny, 26°C")),
        Run("Check the forecast for Thursday for me please", V(date="2024-09-19", city="Kraków", fc="cloudy, 11°C"), explore=0),
    ),
    fail=Fail(
        "How hot will it be this afternoon?", V(date="2024-07-21", city="Manchester", fc="warm"), "feedback",
        calls=lambda v: [ok("get_weather", {"date": v.date, "city": "London"}, {"summary": "24°C"})],
        feedback="I'm not in London! You should have asked me where I am first.",
    ),
    tests=(
        Task("Do I need an umbrella today?", V(date="2024-10-02", city="Ghent", fc="showers")),
        Task("Is it going to snow this weekend?", V(date="2024-12-14", city="Innsbruck", fc="snow")),
        Task("How cold will it get tonight? Should I bring a coat?", V(date="2024-11-05", city="Halifax", fc="2°C")),
        Task("Give me the forecast for next Monday.", V(date="2025-01-13", city="Osaka", fc="clear")),
        Task("Is tomorrow a good day for a picnic, weather-wise?", V(date="2025-04-26", city="Valencia", fc="sunny")),
    ),
)

FLIGHT_AIRPORT = Family(
    id="flight-airport",
    sibling="weather-city",
    domain="travel",
    kind="precondition",
    rule="search_flights takes IATA airport codes, not city names: resolve them with lookup_airport first.",
    task_type="query",
    tools=("search_flights", "lookup_airport", "ask_user", "book_flight"),
    naive=lambda v: [err("search_flights", {"origin": v.o, "destination": v.d, "date": v.date},
                         f"InvalidAirport: '{v.o}' is not a valid IATA airport code")],
    fix=A(
        "lookup_airport for both cities, then search_flights",
        lambda v: [
            ok("lookup_airport", {"city": v.o}, v.oc),
            ok("lookup_airport", {"city": v.d}, v.dc),
            ok("search_flights", {"origin": v.oc, "destination": v.dc, "date": v.date},
               [{"flight": f"{v.oc}{v.dc}1", "price_eur": 129}]),
        ],
        names=(r"lookup_airport", r"search_flights|flight"),
    ),
    wrong=(
        A("ask the user for the airport",
          lambda v: [ok("ask_user", {"question": f"Which airport in {v.o}?"}, "the main one"),
                     err("search_flights", {"origin": f"{v.o} main airport", "destination": v.d, "date": v.date},
                         f"InvalidAirport: '{v.o} main airport' is not a valid IATA airport code")],
          names=(r"ask_user", r"search_flights")),
        A("abbreviate the city to three letters",
          lambda v: [err("search_flights", {"origin": v.o[:3].upper(), "destination": v.d[:3].upper(), "date": v.date},
                         f"InvalidAirport: '{v.o[:3].upper()}' is not a valid IATA airport code")],
          names=(r"search_flights", r"three letters|first (3|three)|abbreviat")),
        A("book directly",
          lambda v: [err("book_flight", {"origin": v.o, "destination": v.d, "date": v.date},
                         "MissingParameter: 'flight_id' is required")],
          names=(r"book_flight",)),
    ),
    train=(
        Run("Find a flight from Paris to Rome next Friday", V(o="Paris", d="Rome", oc="CDG", dc="FCO", date="2024-04-12")),
        Run("I need to get from New York to Chicago on March 3rd, cheapest option",
            V(o="New York", d="Chicago", oc="JFK", dc="ORD", date="2024-03-03")),
        Run("Show me flights Berlin to Lisbon tomorrow morning", V(o="Berlin", d="Lisbon", oc="BER", dc="LIS", date="2024-06-21"), explore=1),
    ),
    fail=Fail("Any direct flights from Munich to Athens on the 20th?",
              V(o="Munich", d="Athens", oc="MUC", dc="ATH", date="2024-08-20"), "retry", repeats=2),
    tests=(
        Task("Book me a plane ticket from Madrid to Vienna for the 14th", V(o="Madrid", d="Vienna", oc="MAD", dc="VIE", date="2024-11-14")),
        Task("What flights are there from Toronto to Boston on Sunday?", V(o="Toronto", d="Boston", oc="YYZ", dc="BOS", date="2024-10-06")),
        Task("I want to fly Dublin → Copenhagen next Tuesday, what are my options?",
             V(o="Dublin", d="Copenhagen", oc="DUB", dc="CPH", date="2024-10-15")),
        Task("Get me the cheapest flight from Stockholm to Prague on May 2", V(o="Stockholm", d="Prague", oc="ARN", dc="PRG", date="2025-05-02")),
        Task("Can you look for a morning flight from Seattle to Denver tomorrow?", V(o="Seattle", d="Denver", oc="SEA", dc="DEN", date="2024-09-28")),
    ),
)


# --------------------------------------------------------------------------------------------
# 2. data / SQL: same tool, two different parameter rules
# --------------------------------------------------------------------------------------------
_SQL_TOOLS = ("sql_query", "list_tables", "describe_table")
_TIMEOUT = "QueryTimeout: canceling statement due to statement timeout (30000 ms)"

SQL_EVENTS_LIMIT = Family(
    id="sql-events-limit",
    sibling="sql-quoted-columns",
    domain="data",
    kind="parameter",
    rule="The events table has billions of rows: every query on it needs a LIMIT, or it times out.",
    task_type="analysis",
    tools=_SQL_TOOLS,
    naive=lambda v: [err("sql_query", {"query": v.q}, _TIMEOUT)],
    fix=A("add a LIMIT", lambda v: [ok("sql_query", {"query": f"{v.q} LIMIT {v.n}"}, {"rows": v.n})],
          names=(r"\blimit\b", r"sql_query|quer|events")),
    wrong=(
        A("raise the statement timeout",
          lambda v: [err("sql_query", {"query": v.q, "timeout_ms": 120000},
                         "PermissionDenied: timeout_ms above 30000 requires the admin role")],
          names=(r"timeout_ms",)),
        A("select fewer columns",
          lambda v: [err("sql_query", {"query": v.q.replace("SELECT *", "SELECT id, event_type")}, _TIMEOUT)],
          names=(r"fewer columns|specific columns|instead of `?\*|select only|select id, event_type",)),
        A("inspect the table first",
          lambda v: [ok("describe_table", {"table": "events"}, {"rows_estimate": 2_140_000_000}),
                     err("sql_query", {"query": v.q}, _TIMEOUT)],
          names=(r"describe_table",)),
        A("quote the identifiers",
          lambda v: [err("sql_query", {"query": v.q.replace("FROM events", 'FROM "events"')}, _TIMEOUT)],
          names=(r"sql_query|column|quer", r'double[- ]quot|quote|"[A-Za-z]+ [A-Za-z ]+"')),
    ),
    train=(
        Run("Show me the latest events for user 4821",
            V(q="SELECT * FROM events WHERE user_id = 4821 ORDER BY created_at DESC", n=50)),
        Run("What did account acme-corp do in the app yesterday?",
            V(q="SELECT event_type, created_at FROM events WHERE account = 'acme-corp' AND created_at >= '2024-03-11'", n=200)),
        Run("pull a sample of checkout_failed events so I can look at the payloads",
            V(q="SELECT payload FROM events WHERE event_type = 'checkout_failed'", n=20), explore=0),
    ),
    tests=(
        Task("List the most recent login events for user 77310",
             V(q="SELECT * FROM events WHERE user_id = 77310 AND event_type = 'login' ORDER BY created_at DESC", n=20)),
        Task("Which events did device d-5521 send last night?",
             V(q="SELECT * FROM events WHERE device_id = 'd-5521' AND created_at >= '2024-10-01 18:00'", n=500)),
        Task("Give me a few example rows of page_view events from the mobile app",
             V(q="SELECT * FROM events WHERE event_type = 'page_view' AND platform = 'mobile'", n=10)),
        Task("Show what happened in session 3b7e91 according to the event log",
             V(q="SELECT event_type, created_at FROM events WHERE session_id = '3b7e91' ORDER BY created_at", n=1000)),
        Task("Find the last purchase events recorded for customer 1209",
             V(q="SELECT * FROM events WHERE customer_id = 1209 AND event_type = 'purchase' ORDER BY created_at DESC", n=25)),
    ),
)


def _unquote(q: str) -> str:
    return q.replace('"', "")


def _syntax(q: str) -> str:
    # the word after the first unquoted two-word column name is where the parser chokes
    first = q.split('"')[1].split()[1] if '"' in q else "Name"
    return f'SyntaxError: syntax error at or near "{first}"'


SQL_QUOTED_COLUMNS = Family(
    id="sql-quoted-columns",
    sibling="sql-events-limit",
    domain="data",
    kind="parameter",
    rule='The CRM table imported from a spreadsheet has column names with spaces: quote them ("First Name").',
    task_type="analysis",
    tools=_SQL_TOOLS,
    naive=lambda v: [err("sql_query", {"query": _unquote(v.q)}, _syntax(v.q))],
    fix=A("double-quote the column names", lambda v: [ok("sql_query", {"query": v.q}, {"rows": 12})],
          names=(r"sql_query|column|quer", r'double[- ]quot|quote|"[A-Za-z]+ [A-Za-z ]+"')),
    wrong=(
        A("use snake_case column names",
          lambda v: [err("sql_query", {"query": _unquote(v.q).replace(v.col, v.col.lower().replace(" ", "_"))},
                         f'UndefinedColumn: column "{v.col.lower().replace(" ", "_")}" does not exist')],
          names=(r"snake|underscore|[a-z]+_name\b",)),
        A("inspect the table first",
          lambda v: [ok("describe_table", {"table": "crm_contacts"}, {"columns": 14}),
                     err("sql_query", {"query": _unquote(v.q)}, _syntax(v.q))],
          names=(r"describe_table",)),
        A("quote with backticks",
          lambda v: [err("sql_query", {"query": v.q.replace('"', "`")}, 'SyntaxError: syntax error at or near "`"')],
          names=(r"backtick",)),
        A("add a LIMIT",
          lambda v: [err("sql_query", {"query": _unquote(v.q) + " LIMIT 100"}, _syntax(v.q))],
          names=(r"\blimit\b", r"sql_query|quer|events")),
    ),
    train=(
        Run("List the first names and emails of French contacts in the CRM",
            V(q='SELECT "First Name", Email FROM crm_contacts WHERE Country = \'FR\'', col="First Name")),
        Run("How many CRM contacts signed up in February?",
            V(q='SELECT COUNT(*) FROM crm_contacts WHERE "Signup Date" >= \'2024-02-01\' AND "Signup Date" < \'2024-03-01\'',
              col="Signup Date")),
        Run("Which customers have a lifetime value above 5000 in the imported CRM sheet?",
            V(q='SELECT "Full Name", "Lifetime Value" FROM crm_contacts WHERE "Lifetime Value" > 5000', col="Full Name"), explore=0),
    ),
    fail=Fail("Average deal size per account owner from the crm_contacts table",
              V(q='SELECT "Account Owner", AVG("Deal Size") FROM crm_contacts GROUP BY "Account Owner"', col="Account Owner"),
              "retry", repeats=2),
    tests=(
        Task("Find the phone numbers of all CRM contacts named Nguyen",
             V(q='SELECT "Phone Number" FROM crm_contacts WHERE "Last Name" = \'Nguyen\'', col="Phone Number")),
        Task("Which contacts in the CRM table belong to the account owner Priya?",
             V(q='SELECT "Full Name" FROM crm_contacts WHERE "Account Owner" = \'Priya\'', col="Full Name")),
        Task("Sum the lifetime value of contacts in Germany from the spreadsheet import",
             V(q='SELECT SUM("Lifetime Value") FROM crm_contacts WHERE Country = \'DE\'', col="Lifetime Value")),
        Task("List CRM contacts whose signup date is in 2023",
             V(q='SELECT "Full Name", Email FROM crm_contacts WHERE "Signup Date" BETWEEN \'2023-01-01\' AND \'2023-12-31\'',
               col="Full Name")),
        Task("Show the email and company name of contacts tagged as partners in crm_contacts",
             V(q='SELECT Email, "Company Name" FROM crm_contacts WHERE Tags LIKE \'%partner%\'', col="Company Name")),
    ),
)


# --------------------------------------------------------------------------------------------
# 3. files: folders must exist / must be empty
# --------------------------------------------------------------------------------------------
def _parent(path: str) -> str:
    return path.rsplit("/", 1)[0] or "/"


FILES_MKDIR_UPLOAD = Family(
    id="files-mkdir-upload",
    sibling="files-delete-recursive",
    domain="files",
    kind="order",
    rule="upload_file does not create missing folders: create_folder first, then upload.",
    task_type="operation",
    tools=("upload_file", "create_folder", "list_folder", "move_file"),
    naive=lambda v: [err("upload_file", {"local_path": v.src, "remote_path": f"{v.dir}/{v.name}"},
                         f"NotFound: parent folder '{v.dir}' does not exist")],
    fix=A("create_folder, then upload_file",
          lambda v: [ok("create_folder", {"path": v.dir}, {"created": v.dir}),
                     ok("upload_file", {"local_path": v.src, "remote_path": f"{v.dir}/{v.name}"}, {"size_kb": 412})],
          names=(r"create_folder", r"upload_file|upload")),
    wrong=(
        A("upload to the root, then move",
          lambda v: [ok("upload_file", {"local_path": v.src, "remote_path": f"/{v.name}"}, {"size_kb": 412}),
                     err("move_file", {"src": f"/{v.name}", "dst": f"{v.dir}/{v.name}"},
                         f"NotFound: parent folder '{v.dir}' does not exist")],
          names=(r"move_file",)),
        A("list the parent folder first",
          lambda v: [ok("list_folder", {"path": _parent(v.dir)}, []),
                     err("upload_file", {"local_path": v.src, "remote_path": f"{v.dir}/{v.name}"},
                         f"NotFound: parent folder '{v.dir}' does not exist")],
          names=(r"list_folder",)),
        A("upload with overwrite",
          lambda v: [err("upload_file", {"local_path": v.src, "remote_path": f"{v.dir}/{v.name}", "overwrite": True},
                         f"NotFound: parent folder '{v.dir}' does not exist")],
          names=(r"overwrite",)),
    ),
    train=(
        Run("Upload the Q2 sales report to /reports/2024-Q2",
            V(src="./out/q2_sales.pdf", dir="/reports/2024-Q2", name="q2_sales.pdf")),
        Run("Back up invoices.zip into the archive folder for March",
            V(src="~/Downloads/invoices.zip", dir="/archive/2024/03", name="invoices.zip")),
        Run("put the new logo files in /brand/logos/v3",
            V(src="./design/logo_dark.svg", dir="/brand/logos/v3", name="logo_dark.svg"), explore=1),
    ),
    tests=(
        Task("Save this contract PDF under /legal/contracts/acme-2025",
             V(src="./contract_signed.pdf", dir="/legal/contracts/acme-2025", name="contract_signed.pdf")),
        Task("Copy my local photos.tar to the shared drive in /events/offsite-2024/photos",
             V(src="~/photos.tar", dir="/events/offsite-2024/photos", name="photos.tar")),
        Task("Store the exported dashboard.png in a new folder /analytics/weekly/2024-w41",
             V(src="./dashboard.png", dir="/analytics/weekly/2024-w41", name="dashboard.png")),
        Task("Upload notes.md to /projects/hindsight/meeting-notes",
             V(src="./notes.md", dir="/projects/hindsight/meeting-notes", name="notes.md")),
        Task("Please drop budget_v2.xlsx into /finance/budgets/fy26",
             V(src="~/Desktop/budget_v2.xlsx", dir="/finance/budgets/fy26", name="budget_v2.xlsx")),
    ),
)

FILES_DELETE_RECURSIVE = Family(
    id="files-delete-recursive",
    sibling="files-mkdir-upload",
    domain="files",
    kind="parameter",
    rule="delete_folder refuses non-empty folders unless recursive=true.",
    task_type="operation",
    tools=("delete_folder", "list_folder", "delete_file", "create_folder"),
    naive=lambda v: [err("delete_folder", {"path": v.dir}, f"DirectoryNotEmpty: '{v.dir}' contains {v.n} items")],
    fix=A("delete_folder with recursive=true",
          lambda v: [ok("delete_folder", {"path": v.dir, "recursive": True}, {"deleted_items": v.n + 1})],
          names=(r"recursive",)),
    wrong=(
        A("delete the files one by one",
          lambda v: [ok("list_folder", {"path": v.dir}, [f"{v.dir}/{v.first}", "..."]),
                     ok("delete_file", {"path": f"{v.dir}/{v.first}"}, "deleted"),
                     err("delete_folder", {"path": v.dir}, f"DirectoryNotEmpty: '{v.dir}' contains {v.n - 1} items")],
          names=(r"delete_file",)),
        A("pass force",
          lambda v: [err("delete_folder", {"path": v.dir, "force": True}, "ValidationError: unknown parameter 'force'")],
          names=(r"\bforce\b",)),
        A("delete with a wildcard",
          lambda v: [err("delete_folder", {"path": f"{v.dir}/*"}, "InvalidPath: wildcards are not supported")],
          names=(r"wildcard|/\*",)),
    ),
    train=(
        Run("Delete the old build folder /tmp/build-381", V(dir="/tmp/build-381", n=12, first="app.js")),
        Run("Clean up /scratch/experiments/run-17, we don't need it anymore",
            V(dir="/scratch/experiments/run-17", n=230, first="metrics.csv")),
        Run("remove the folder /shared/old-drafts", V(dir="/shared/old-drafts", n=5, first="draft1.docx"), explore=1),
    ),
    fail=Fail("Get rid of /cache/thumbnails", V(dir="/cache/thumbnails", n=4810, first="a1.jpg"), "retry", repeats=2),
    tests=(
        Task("Wipe the directory /data/tmp/import-2291", V(dir="/data/tmp/import-2291", n=37, first="part-0001.csv")),
        Task("Remove the entire /projects/legacy-site folder", V(dir="/projects/legacy-site", n=412, first="index.html")),
        Task("Delete /home/ana/Downloads/old-course-material, it's obsolete",
             V(dir="/home/ana/Downloads/old-course-material", n=58, first="week1.pdf")),
        Task("Clear out the staging folder /deploy/staging-v1 by deleting it", V(dir="/deploy/staging-v1", n=9, first="app.tar.gz")),
        Task("Can you get rid of the /logs/2022 directory?", V(dir="/logs/2022", n=365, first="2022-01-01.log")),
    ),
)


# --------------------------------------------------------------------------------------------
# 4. calendar / email
# --------------------------------------------------------------------------------------------
CALENDAR_BOOK_ROOM = Family(
    id="calendar-book-room",
    sibling="email-lookup-contact",
    domain="calendar",
    kind="order",
    rule="A meeting room must be reserved with book_room before create_event can use it.",
    task_type="operation",
    tools=("create_event", "book_room", "find_free_slot", "lookup_contact", "send_email"),
    naive=lambda v: [err("create_event", {"title": v.title, "start": v.start, "end": v.end, "room": v.room},
                         f"RoomNotReserved: {v.room} is not reserved for this slot")],
    fix=A("book_room, then create_event",
          lambda v: [ok("book_room", {"room": v.room, "start": v.start, "end": v.end}, {"reservation_id": f"R-{v.rid}"}),
                     ok("create_event", {"title": v.title, "start": v.start, "end": v.end, "room": v.room,
                                         "reservation_id": f"R-{v.rid}"}, {"event_id": f"ev{v.rid}"})],
          names=(r"book_room", r"create_event|event|meeting")),
    wrong=(
        A("look for a free slot first",
          lambda v: [ok("find_free_slot", {"start": v.start, "duration_min": 60}, [v.start]),
                     err("create_event", {"title": v.title, "start": v.start, "end": v.end, "room": v.room},
                         f"RoomNotReserved: {v.room} is not reserved for this slot")],
          names=(r"find_free_slot",)),
        A("put the room in the location field",
          lambda v: [err("create_event", {"title": v.title, "start": v.start, "end": v.end, "location": v.room},
                         f"RoomNotReserved: {v.room} is not reserved for this slot")],
          names=(r"\blocation\b",)),
        A("email facilities",
          lambda v: [ok("send_email", {"to": "facilities@northwind.io", "subject": f"Room {v.room}", "body": v.start}, "sent"),
                     err("create_event", {"title": v.title, "start": v.start, "end": v.end, "room": v.room},
                         f"RoomNotReserved: {v.room} is not reserved for this slot")],
          names=(r"send_email|facilit",)),
    ),
    train=(
        Run("Set up a 1h design review with Tom and Aisha in room Everest on Tuesday at 3pm",
            V(title="Design review", start="2024-05-14T15:00", end="2024-05-14T16:00", room="Everest", rid=1042)),
        Run("Schedule the quarterly planning meeting in the Kilimanjaro room, June 12, 10:00-12:00",
            V(title="Quarterly planning", start="2024-06-12T10:00", end="2024-06-12T12:00", room="Kilimanjaro", rid=1107)),
        Run("Book a sync with the data team in meeting room 4.12 tomorrow at 9",
            V(title="Data team sync", start="2024-07-03T09:00", end="2024-07-03T09:30", room="4.12", rid=1188), explore=0),
    ),
    tests=(
        Task("Organize a workshop in the Matterhorn room next Wednesday from 2 to 4pm",
             V(title="Workshop", start="2024-10-16T14:00", end="2024-10-16T16:00", room="Matterhorn", rid=2001)),
        Task("Put a 30-minute 1:1 with Leo in room Denali on Friday morning",
             V(title="1:1 Leo", start="2024-10-18T09:30", end="2024-10-18T10:00", room="Denali", rid=2002)),
        Task("Schedule the onboarding session for new hires in conference room B2 on the 21st at 11",
             V(title="Onboarding", start="2024-10-21T11:00", end="2024-10-21T12:00", room="B2", rid=2003)),
        Task("Create a meeting in room Aconcagua for the launch retro, Thursday 16:00",
             V(title="Launch retro", start="2024-10-24T16:00", end="2024-10-24T17:00", room="Aconcagua", rid=2004)),
        Task("Set up an interview panel in the Fuji room Monday 10am for an hour",
             V(title="Interview panel", start="2024-10-28T10:00", end="2024-10-28T11:00", room="Fuji", rid=2005)),
    ),
)

EMAIL_LOOKUP_CONTACT = Family(
    id="email-lookup-contact",
    sibling="calendar-book-room",
    domain="email",
    kind="precondition",
    rule="send_email needs an email address, not a first name: resolve it with lookup_contact first.",
    task_type="operation",
    tools=("send_email", "lookup_contact", "list_inbox", "create_event"),
    naive=lambda v: [err("send_email", {"to": v.name, "subject": v.subject, "body": "..."},
                         f"InvalidRecipient: '{v.name}' is not an email address")],
    fix=A("lookup_contact, then send_email",
          lambda v: [ok("lookup_contact", {"name": v.name}, {"email": v.email}),
                     ok("send_email", {"to": v.email, "subject": v.subject, "body": "..."}, "sent")],
          names=(r"lookup_contact", r"send_email|e-?mail")),
    wrong=(
        A("guess the company address",
          lambda v: [err("send_email", {"to": f"{v.name.lower()}@company.com", "subject": v.subject, "body": "..."},
                         f"BounceError: mailbox {v.name.lower()}@company.com does not exist")],
          names=(r"@company\.com|guess",)),
        A("search the inbox for the address",
          lambda v: [ok("list_inbox", {"query": v.name, "limit": 10}, []),
                     err("send_email", {"to": v.name, "subject": v.subject, "body": "..."},
                         f"InvalidRecipient: '{v.name}' is not an email address")],
          names=(r"list_inbox",)),
        A("send it as a calendar invite",
          lambda v: [err("create_event", {"title": v.subject, "attendees": [v.name]},
                         f"InvalidAttendee: '{v.name}' is not an email address")],
          names=(r"create_event",)),
    ),
    train=(
        Run("Email Maria the slides from today's meeting", V(name="Maria", email="maria.rossi@northwind.io", subject="Slides")),
        Run("Send a quick note to Jonas saying I'll be 10 minutes late",
            V(name="Jonas", email="j.berg@northwind.io", subject="Running late")),
        Run("Forward the invoice summary to Priya in accounting",
            V(name="Priya", email="priya.nair@northwind.io", subject="Invoice summary"), explore=0),
    ),
    fail=Fail("Write to Sam about the offsite dates", V(name="Sam", email="sam.okafor@northwind.io", subject="Offsite"),
              "retry", repeats=2),
    tests=(
        Task("Send Kenji an email with the agenda for Monday", V(name="Kenji", email="kenji.sato@northwind.io", subject="Agenda")),
        Task("Let Olivia know by email that the contract is signed",
             V(name="Olivia", email="olivia.grant@northwind.io", subject="Contract signed")),
        Task("Mail the updated budget to Rahul", V(name="Rahul", email="rahul.mehta@northwind.io", subject="Updated budget")),
        Task("Drop Fatima a line thanking her for the intro", V(name="Fatima", email="f.zahra@northwind.io", subject="Thanks")),
        Task("Could you email Lucas the link to the design doc?", V(name="Lucas", email="lucas.moreau@northwind.io", subject="Design doc")),
    ),
)


# --------------------------------------------------------------------------------------------
# 5. payments: the same validation error, two different fixes
# --------------------------------------------------------------------------------------------
# "names the fix": the amount parameter, and minor units said in words or shown as an integer
# example against a decimal one ("1999 instead of 19.99", "1999, not 19.99").
_CENTS = (r"\bamount\b", r"\bcents?\b|minor units?|smallest (currency )?unit|"
          r"\b\d{3,}\b[^;]{0,40}\b(instead of|not|rather than)\b[^;]{0,30}\b\d+\.\d{1,2}\b")

REFUND_TOOL = Family(
    id="payments-refund-tool",
    sibling="payments-minor-units",
    domain="payments",
    kind="tool_choice",
    rule="Money goes back with refund_payment, never with create_payment and a negative amount.",
    task_type="operation",
    tools=("create_payment", "refund_payment", "get_payment", "get_customer"),
    pre=lambda v: [ok("get_payment", {"order_id": v.order}, {"payment_id": v.pay, "customer": v.cus, "amount": v.amt,
                                                              "currency": "eur"})],
    naive=lambda v: [err("create_payment", {"customer": v.cus, "amount": -v.amt, "currency": "eur",
                                            "description": f"refund order {v.order}"},
                         f"InvalidAmount: amount must be a positive integer, got {-v.amt}")],
    fix=A("refund_payment",
          lambda v: [ok("refund_payment", {"payment_id": v.pay, "amount": v.amt}, {"refund_id": f"re_{v.order}", "status": "succeeded"})],
          names=(r"refund_payment",)),
    wrong=(
        A("create_payment with type=refund",
          lambda v: [err("create_payment", {"customer": v.cus, "amount": v.amt, "currency": "eur", "type": "refund"},
                         "ValidationError: unknown field 'type'")],
          names=(r"\btype\b.{0,20}refund|refund.{0,20}\btype\b",)),
        A("look up the customer first",
          lambda v: [ok("get_customer", {"id": v.cus}, {"id": v.cus, "balance": 0}),
                     err("create_payment", {"customer": v.cus, "amount": -v.amt, "currency": "eur"},
                         f"InvalidAmount: amount must be a positive integer, got {-v.amt}")],
          names=(r"get_customer",)),
        A("convert the amount to cents",
          lambda v: [err("create_payment", {"customer": v.cus, "amount": -v.amt * 100, "currency": "eur"},
                         f"InvalidAmount: amount must be a positive integer, got {-v.amt * 100}")],
          names=_CENTS),
    ),
    train=(
        Run("Refund order 5531, the customer returned the shoes", V(order=5531, pay="pi_3Nx81a", cus="cus_4410", amt=8900)),
        Run("Give Martina Hoffmann her money back for the duplicate charge on order 7702",
            V(order=7702, pay="pi_3Oq27c", cus="cus_9123", amt=4250)),
        Run("process a refund of 25 EUR for order 1180", V(order=1180, pay="pi_3Lm90z", cus="cus_0877", amt=2500), explore=0),
    ),
    tests=(
        Task("The customer on order 9043 wants a refund, please process it", V(order=9043, pay="pi_4Aa11b", cus="cus_6001", amt=15900)),
        Task("Return the 49 EUR that we charged by mistake on order 3310", V(order=3310, pay="pi_4Bb22c", cus="cus_6002", amt=4900)),
        Task("Issue a full refund for order 6127, the item never shipped", V(order=6127, pay="pi_4Cc33d", cus="cus_6003", amt=7999)),
        Task("Pay back the customer for order 2289; they cancelled within 14 days",
             V(order=2289, pay="pi_4Dd44e", cus="cus_6004", amt=3400)),
        Task("Reverse the charge on order 4470", V(order=4470, pay="pi_4Ee55f", cus="cus_6005", amt=1250)),
    ),
)


def _cents(x: str) -> int:
    return int(round(float(x) * 100))


MINOR_UNITS = Family(
    id="payments-minor-units",
    sibling="payments-refund-tool",
    domain="payments",
    kind="parameter",
    rule="create_payment takes the amount in minor units (cents) as an integer: 19.99 EUR is 1999.",
    task_type="operation",
    tools=("create_payment", "get_customer", "refund_payment", "create_invoice"),
    naive=lambda v: [err("create_payment", {"customer": v.cus, "amount": float(v.amt), "currency": v.cur},
                         f"InvalidAmount: amount must be a positive integer, got {v.amt}")],
    fix=A("amount in cents",
          lambda v: [ok("create_payment", {"customer": v.cus, "amount": _cents(v.amt), "currency": v.cur},
                        {"payment_id": f"pi_{v.cus[-4:]}x", "status": "succeeded"})],
          names=_CENTS),
    wrong=(
        A("send the amount as a string",
          lambda v: [err("create_payment", {"customer": v.cus, "amount": v.amt, "currency": v.cur},
                         f"InvalidAmount: amount must be a positive integer, got '{v.amt}'")],
          names=(r"\bstring\b|as text|quoted amount",)),
        A("create an invoice instead",
          lambda v: [err("create_invoice", {"customer": v.cus, "amount": float(v.amt), "currency": v.cur},
                         f"InvalidAmount: amount must be a positive integer, got {v.amt}")],
          names=(r"create_invoice",)),
        A("look up the customer's currency first",
          lambda v: [ok("get_customer", {"id": v.cus}, {"id": v.cus, "currency": v.cur}),
                     err("create_payment", {"customer": v.cus, "amount": float(v.amt), "currency": v.cur},
                         f"InvalidAmount: amount must be a positive integer, got {v.amt}")],
          names=(r"get_customer",)),
    ),
    train=(
        Run("Charge customer cus_8812 19.99 EUR for the monthly plan", V(cus="cus_8812", amt="19.99", cur="eur")),
        Run("Bill cus_2290 $120.50 for the consulting session", V(cus="cus_2290", amt="120.50", cur="usd")),
        Run("take a payment of 7.5 GBP from cus_1043 for the late fee", V(cus="cus_1043", amt="7.5", cur="gbp"), explore=0),
    ),
    fail=Fail("Collect 42.90 EUR from cus_7781", V(cus="cus_7781", amt="42.90", cur="eur"), "retry", repeats=2),
    tests=(
        Task("Charge cus_5120 34.95 EUR for the annual add-on", V(cus="cus_5120", amt="34.95", cur="eur")),
        Task("Take 12.40 USD from customer cus_9987 for extra storage", V(cus="cus_9987", amt="12.40", cur="usd")),
        Task("Bill the client cus_3001 250.75 CHF for the workshop", V(cus="cus_3001", amt="250.75", cur="chf")),
        Task("Create a 5.99 EUR payment for cus_4410's upgrade", V(cus="cus_4410", amt="5.99", cur="eur")),
        Task("Collect 89.00 GBP from customer cus_2218", V(cus="cus_2218", amt="89.00", cur="gbp")),
    ),
)


# --------------------------------------------------------------------------------------------
# 6. devops / k8s: same tools, two different missing parameters
# --------------------------------------------------------------------------------------------
_K8S_TOOLS = ("kubectl_get", "kubectl_scale", "kubectl_logs", "kubectl_rollout_restart")

K8S_SCALE_NAMESPACE = Family(
    id="k8s-scale-namespace",
    sibling="k8s-logs-container",
    domain="devops",
    kind="parameter",
    rule="All services run in namespace prod; the default namespace is empty: pass namespace=prod.",
    task_type="operation",
    tools=_K8S_TOOLS,
    naive=lambda v: [err("kubectl_scale", {"deployment": v.dep, "replicas": v.n},
                         f'NotFound: deployments.apps "{v.dep}" not found in namespace "default"')],
    fix=A("pass namespace=prod",
          lambda v: [ok("kubectl_scale", {"deployment": v.dep, "replicas": v.n, "namespace": "prod"}, f"deployment.apps/{v.dep} scaled")],
          names=(r"namespace", r"\bprod\b")),
    wrong=(
        A("list the deployments first",
          lambda v: [ok("kubectl_get", {"resource": "deployments"}, []),
                     err("kubectl_scale", {"deployment": v.dep, "replicas": v.n},
                         f'NotFound: deployments.apps "{v.dep}" not found in namespace "default"')],
          names=(r"kubectl_get",)),
        A("use the -deployment suffix",
          lambda v: [err("kubectl_scale", {"deployment": f"{v.dep}-deployment", "replicas": v.n},
                         f'NotFound: deployments.apps "{v.dep}-deployment" not found in namespace "default"')],
          names=(r"-deployment\b|suffix",)),
        A("rollout restart instead",
          lambda v: [err("kubectl_rollout_restart", {"deployment": v.dep},
                         f'NotFound: deployments.apps "{v.dep}" not found in namespace "default"')],
          names=(r"kubectl_rollout_restart|rollout",)),
    ),
    train=(
        Run("Scale checkout-api to 6 replicas for the sale tonight", V(dep="checkout-api", n=6)),
        Run("bump search-indexer up to 10 pods", V(dep="search-indexer", n=10)),
        Run("Reduce the replicas of email-worker to 2, it's overprovisioned", V(dep="email-worker", n=2), explore=0),
    ),
    fail=Fail("Scale down the recommendations service to zero", V(dep="recommendations", n=0), "retry", repeats=2),
    tests=(
        Task("Scale the billing-worker deployment to 4 replicas", V(dep="billing-worker", n=4)),
        Task("We expect a traffic spike: increase cart-service to 12 pods", V(dep="cart-service", n=12)),
        Task("Set image-resizer to 3 replicas", V(dep="image-resizer", n=3)),
        Task("Scale notification-api down to 1 replica overnight", V(dep="notification-api", n=1)),
        Task("Add more capacity to the pricing-engine deployment, go to 8 replicas", V(dep="pricing-engine", n=8)),
    ),
)


def _no_container(pod: str) -> str:
    return f"BadRequest: a container name must be specified for pod {pod}, choose one of: [app istio-proxy]"


K8S_LOGS_CONTAINER = Family(
    id="k8s-logs-container",
    sibling="k8s-scale-namespace",
    domain="devops",
    kind="parameter",
    rule="Pods have a sidecar: kubectl_logs needs container=app.",
    task_type="query",
    tools=_K8S_TOOLS,
    naive=lambda v: [err("kubectl_logs", {"pod": v.pod, "namespace": "prod", "tail": v.tail}, _no_container(v.pod))],
    fix=A("pass container=app",
          lambda v: [ok("kubectl_logs", {"pod": v.pod, "namespace": "prod", "tail": v.tail, "container": "app"},
                        f"{v.tail} lines")],
          names=(r"container",)),
    wrong=(
        A("read the deployment's logs instead",
          lambda v: [err("kubectl_logs", {"deployment": v.pod.rsplit("-", 2)[0], "namespace": "prod", "tail": v.tail},
                         _no_container(v.pod))],
          names=(r"kubectl_logs.{0,40}deployment|deployment.{0,40}kubectl_logs",)),
        A("describe the pod first",
          lambda v: [ok("kubectl_get", {"resource": "pod", "name": v.pod, "namespace": "prod"}, {"status": "Running"}),
                     err("kubectl_logs", {"pod": v.pod, "namespace": "prod", "tail": v.tail}, _no_container(v.pod))],
          names=(r"kubectl_get",)),
        A("ask for the previous logs",
          lambda v: [err("kubectl_logs", {"pod": v.pod, "namespace": "prod", "tail": v.tail, "previous": True},
                         _no_container(v.pod))],
          names=(r"\bprevious\b",)),
    ),
    train=(
        Run("Show me the last errors from the checkout-api pod checkout-api-7f9c6d-x2k4p", V(pod="checkout-api-7f9c6d-x2k4p", tail=200)),
        Run("why is payments-gateway-5d8b9-qq7rt crashing? check its logs", V(pod="payments-gateway-5d8b9-qq7rt", tail=500)),
        Run("Tail the logs of search-api-66c4f-9hz2m", V(pod="search-api-66c4f-9hz2m", tail=100), explore=2),
    ),
    tests=(
        Task("Get the logs from pod cart-service-84d7b-m3v9k", V(pod="cart-service-84d7b-m3v9k", tail=200)),
        Task("What is the pricing-engine-7c9f8-2wqzd pod printing? Look at its output", V(pod="pricing-engine-7c9f8-2wqzd", tail=200)),
        Task("Check the recent log lines of notification-api-5b6c7-kk8s2 for timeouts", V(pod="notification-api-5b6c7-kk8s2", tail=300)),
        Task("Fetch the last 100 log lines of billing-worker-69f4d-p7x1c", V(pod="billing-worker-69f4d-p7x1c", tail=100)),
        Task("Inspect the logs of the image-resizer-7d5c9-vb3n8 pod; it keeps restarting", V(pod="image-resizer-7d5c9-vb3n8", tail=200)),
    ),
)


# --------------------------------------------------------------------------------------------
# 7. HTTP APIs: same tool, a token first vs an idempotency key
# --------------------------------------------------------------------------------------------
_API = "https://api.internal.example/v2"
_HTTP_TOOLS = ("http_request", "get_token", "read_docs")
_BEARER = {"Authorization": "Bearer eyJhbGciOiJSUzI1NiJ9.bench"}

HTTP_AUTH_TOKEN = Family(
    id="http-auth-token",
    sibling="http-idempotency-key",
    domain="http-api",
    kind="precondition",
    rule="The internal API needs a bearer token: call get_token first and send it.",
    task_type="query",
    tools=_HTTP_TOOLS,
    naive=lambda v: [err("http_request", {"method": "GET", "url": f"{_API}/{v.path}"}, "401 Unauthorized: missing or invalid bearer token")],
    fix=A("get_token, then the request with the token",
          lambda v: [ok("get_token", {"audience": "api.internal.example"}, {"access_token": "eyJhbGciOiJSUzI1NiJ9.bench", "expires_in": 3600}),
                     ok("http_request", {"method": "GET", "url": f"{_API}/{v.path}", "headers": _BEARER}, {"status": 200})],
          names=(r"get_token",)),
    wrong=(
        A("pass an api_key query parameter",
          lambda v: [err("http_request", {"method": "GET", "url": f"{_API}/{v.path}", "params": {"api_key": "demo"}},
                         "401 Unauthorized: missing or invalid bearer token")],
          names=(r"api_key",)),
        A("read the docs first",
          lambda v: [ok("read_docs", {"topic": v.path.split("/")[0].split("?")[0]}, "see the endpoint reference"),
                     err("http_request", {"method": "GET", "url": f"{_API}/{v.path}"}, "401 Unauthorized: missing or invalid bearer token")],
          names=(r"read_docs",)),
        A("basic auth with default credentials",
          lambda v: [err("http_request", {"method": "GET", "url": f"{_API}/{v.path}", "headers": {"Authorization": "Basic YWRtaW46YWRtaW4="}},
                         "401 Unauthorized: missing or invalid bearer token")],
          names=(r"\bbasic\b",)),
    ),
    train=(
        Run("Fetch the list of open orders from the internal orders API", V(path="orders?status=open")),
        Run("How many active users does the admin API report for today?", V(path="admin/stats/active-users?date=2024-05-02")),
        Run("Get customer 88213's profile from the internal API", V(path="customers/88213"), explore=1),
    ),
    fail=Fail("Pull the inventory levels for SKU 44-1902", V(path="inventory/44-1902"), "retry", repeats=3),
    tests=(
        Task("Call the internal API to get the shipping status of order 55102", V(path="orders/55102/shipment")),
        Task("Retrieve the current feature flags from the config service endpoint", V(path="config/feature-flags")),
        Task("What does the internal inventory endpoint say about SKU 10-7734?", V(path="inventory/10-7734")),
        Task("Look up invoice 2024-0915 through the billing API", V(path="billing/invoices/2024-0915")),
        Task("GET the list of pending refunds from our internal payments API", V(path="payments/refunds?status=pending")),
    ),
)


def _post(v, **extra):
    headers = dict(_BEARER)
    headers.update(extra.pop("headers", {}))
    return {"method": extra.pop("method", "POST"), "url": f"{_API}/{v.path}", "headers": headers, "json": v.body, **extra}


_NEED_IDEM = "400 Bad Request: header Idempotency-Key is required for POST requests"

HTTP_IDEMPOTENCY = Family(
    id="http-idempotency-key",
    sibling="http-auth-token",
    domain="http-api",
    kind="parameter",
    rule="POSTs to the internal API need an Idempotency-Key header.",
    task_type="operation",
    tools=_HTTP_TOOLS,
    pre=lambda v: [ok("get_token", {"audience": "api.internal.example"}, {"access_token": "eyJhbGciOiJSUzI1NiJ9.bench", "expires_in": 3600})],
    naive=lambda v: [err("http_request", _post(v), _NEED_IDEM)],
    fix=A("add an Idempotency-Key header",
          lambda v: [ok("http_request", _post(v, headers={"Idempotency-Key": v.key}), {"status": 201})],
          names=(r"idempotency",)),
    wrong=(
        A("use PUT instead of POST",
          lambda v: [err("http_request", _post(v, method="PUT"), "405 Method Not Allowed: PUT is not supported on this resource")],
          names=(r"\bPUT\b",)),
        A("refresh the token",
          lambda v: [ok("get_token", {"audience": "api.internal.example"}, {"access_token": "eyJhbGciOiJSUzI1NiJ9.bench2"}),
                     err("http_request", _post(v), _NEED_IDEM)],
          names=(r"get_token",)),
        A("send the body as form data",
          lambda v: [err("http_request", {**_post(v), "json": None, "data": v.body},
                         "415 Unsupported Media Type: expected application/json")],
          names=(r"form[- ]data|form-urlencoded|\bdata\b.{0,20}instead of.{0,10}json",)),
    ),
    train=(
        Run("Create an order for customer 4410 with 2 units of SKU 77-1200 via the orders API",
            V(path="orders", body={"customer": 4410, "items": [{"sku": "77-1200", "qty": 2}]}, key="b1f0c2d4-0001")),
        Run("Register a new webhook for the shipping events pointing at https://hooks.acme.dev/ship",
            V(path="webhooks", body={"event": "shipment.*", "url": "https://hooks.acme.dev/ship"}, key="b1f0c2d4-0002")),
        Run("POST a new support contact for account 9001 to the CRM API",
            V(path="contacts", body={"account": 9001, "role": "support"}, key="b1f0c2d4-0003"), explore=0),
    ),
    tests=(
        Task("Submit a new order through the API: 5 units of SKU 31-0045 for customer 7722",
             V(path="orders", body={"customer": 7722, "items": [{"sku": "31-0045", "qty": 5}]}, key="c9a1e7f3-0001")),
        Task("Create a webhook subscription for invoice.paid events via our API",
             V(path="webhooks", body={"event": "invoice.paid", "url": "https://hooks.acme.dev/inv"}, key="c9a1e7f3-0002")),
        Task("Add a new shipping address for customer 1288 using the internal API",
             V(path="customers/1288/addresses", body={"line1": "4 Rue Oberkampf", "city": "Paris"}, key="c9a1e7f3-0003")),
        Task("Use the orders API to place a replacement order for order 55102",
             V(path="orders", body={"replaces": 55102}, key="c9a1e7f3-0004")),
        Task("Post a new coupon code SPRING25 to the promotions endpoint",
             V(path="promotions/coupons", body={"code": "SPRING25", "percent_off": 25}, key="c9a1e7f3-0005")),
    ),
)


# --------------------------------------------------------------------------------------------
# 8. search: a date format vs the right index
# --------------------------------------------------------------------------------------------
_SEARCH_TOOLS = ("web_search", "search_news", "search_wiki", "fetch_page")


def _since_error(x) -> str:
    shown = f"'{x}'" if isinstance(x, str) else str(x)
    return f"ValidationError: 'since' must be an ISO-8601 date (YYYY-MM-DD), got {shown}"


SEARCH_NEWS_DATE = Family(
    id="search-news-date",
    sibling="search-wiki-internal",
    domain="search",
    kind="parameter",
    rule="search_news filters by date only with since=YYYY-MM-DD; relative phrases are rejected.",
    task_type="query",
    tools=_SEARCH_TOOLS,
    naive=lambda v: [err("search_news", {"query": v.q, "since": v.rel}, _since_error(v.rel))],
    fix=A("since as an ISO date",
          lambda v: [ok("search_news", {"query": v.q, "since": v.iso}, [{"title": f"{v.q} ...", "date": v.iso}])],
          names=(r"\bsince\b", r"\d{4}-\d{2}-\d{2}|yyyy-mm-dd|iso[- ]?8601|iso date")),
    wrong=(
        A("a relative shorthand like 7d",
          lambda v: [err("search_news", {"query": v.q, "since": "7d"}, _since_error("7d"))],
          names=(r"\b7d\b|shorthand",)),
        A("an epoch timestamp",
          lambda v: [err("search_news", {"query": v.q, "since": 1714953600}, _since_error(1714953600))],
          names=(r"epoch|unix time|timestamp",)),
        A("a date_range parameter",
          lambda v: [err("search_news", {"query": v.q, "date_range": v.rel}, "ValidationError: unknown parameter 'date_range'")],
          names=(r"date_range",)),
    ),
    train=(
        Run("What's been in the news about Nvidia over the last week?", V(q="Nvidia", rel="last week", iso="2024-05-06")),
        Run("Find news articles from the past 3 days about the port strike in Rotterdam",
            V(q="Rotterdam port strike", rel="past 3 days", iso="2024-07-15")),
        Run("any recent coverage of the EU AI Act this month?", V(q="EU AI Act", rel="this month", iso="2024-09-01"), explore=0),
    ),
    fail=Fail("Latest headlines about the Boeing 737 MAX since yesterday", V(q="Boeing 737 MAX", rel="yesterday", iso="2024-03-19"),
              "retry", repeats=2),
    tests=(
        Task("Summarize the news about OpenAI from the past two weeks", V(q="OpenAI", rel="past two weeks", iso="2024-10-01")),
        Task("What have newspapers reported on the Lisbon heatwave since Monday?", V(q="Lisbon heatwave", rel="since Monday", iso="2024-08-05")),
        Task("Find recent articles (last 48 hours) about the SAP earnings call", V(q="SAP earnings call", rel="last 48 hours", iso="2024-10-22")),
        Task("Any news this week about the interest rate decision in Japan?", V(q="Bank of Japan interest rate", rel="this week", iso="2024-07-29")),
        Task("Collect press coverage from the last month about our competitor Zendesk", V(q="Zendesk", rel="last month", iso="2024-09-15")),
    ),
)

SEARCH_WIKI_INTERNAL = Family(
    id="search-wiki-internal",
    sibling="search-news-date",
    domain="search",
    kind="tool_choice",
    rule="Company policies and runbooks are only in the internal wiki: use search_wiki, not web_search.",
    task_type="query",
    tools=_SEARCH_TOOLS,
    naive=lambda v: [err("web_search", {"query": v.q}, f"NoResults: no public pages match '{v.q}'")],
    fix=A("search_wiki", lambda v: [ok("search_wiki", {"query": v.q}, [{"title": v.page, "url": f"wiki://{v.page}"}])],
          names=(r"search_wiki",)),
    wrong=(
        A("fetch the intranet page directly",
          lambda v: [err("fetch_page", {"url": f"https://intranet.acme.local/search?q={v.q.replace(' ', '+')}"},
                         "ConnectionError: could not resolve host intranet.acme.local")],
          names=(r"fetch_page",)),
        A("search the news",
          lambda v: [err("search_news", {"query": v.q, "since": "2020-01-01"}, f"NoResults: no articles match '{v.q}'")],
          names=(r"search_news",)),
        A("a shorter web search",
          lambda v: [err("web_search", {"query": " ".join(v.q.split()[1:])}, f"NoResults: no public pages match '{' '.join(v.q.split()[1:])}'")],
          names=(r"web_search.{0,60}(broader|shorter|fewer (key)?words)|(broader|shorter|fewer (key)?words).{0,60}web_search",)),
    ),
    train=(
        Run("What is our parental leave policy?", V(q="acme parental leave policy", page="HR/Parental-leave")),
        Run("How do I request a new laptop at Acme?", V(q="acme laptop request process", page="IT/Hardware-requests")),
        Run("find the on-call rotation rules for the platform team", V(q="platform team on-call rotation", page="Platform/On-call"), explore=0),
    ),
    tests=(
        Task("What's the company policy on expensing home office equipment?", V(q="acme home office expenses policy", page="Finance/Expenses")),
        Task("How many vacation days do new employees at Acme get?", V(q="acme vacation days new employees", page="HR/Time-off")),
        Task("Where is the runbook for restarting the billing pipeline?", V(q="billing pipeline restart runbook", page="Runbooks/Billing")),
        Task("Who approves travel requests above 2000 EUR internally?", V(q="acme travel request approval", page="Finance/Travel")),
        Task("Find our internal guidelines for naming git branches", V(q="acme git branch naming guidelines", page="Eng/Git-conventions")),
    ),
)


# --------------------------------------------------------------------------------------------
# 9. support tickets: closing vs escalating
# --------------------------------------------------------------------------------------------
_TICKET_TOOLS = ("get_ticket", "update_ticket", "reply_ticket", "escalate_ticket", "assign_ticket")
_NEED_RES = "ValidationError: 'resolution' is required when status is 'closed'"

TICKET_CLOSE_RESOLUTION = Family(
    id="ticket-close-resolution",
    sibling="ticket-escalate",
    domain="support",
    kind="parameter",
    rule="Closing a ticket needs a resolution code (fixed, duplicate, no_response, user_error...).",
    task_type="operation",
    tools=_TICKET_TOOLS,
    naive=lambda v: [err("update_ticket", {"ticket_id": v.id, "status": "closed"}, _NEED_RES)],
    fix=A("close with a resolution",
          lambda v: [ok("update_ticket", {"ticket_id": v.id, "status": "closed", "resolution": v.res}, {"status": "closed"})],
          names=(r"resolution",)),
    wrong=(
        A("status solved",
          lambda v: [err("update_ticket", {"ticket_id": v.id, "status": "solved"},
                         "ValidationError: unknown status 'solved'; allowed: open, pending, closed")],
          names=(r"\bsolved\b",)),
        A("reply to the customer first",
          lambda v: [ok("reply_ticket", {"ticket_id": v.id, "body": "Closing this ticket now."}, "sent"),
                     err("update_ticket", {"ticket_id": v.id, "status": "closed"}, _NEED_RES)],
          names=(r"reply_ticket",)),
        A("add a closing comment",
          lambda v: [err("update_ticket", {"ticket_id": v.id, "status": "closed", "comment": "resolved"}, _NEED_RES)],
          names=(r"\bcomment\b",)),
    ),
    train=(
        Run("Close ticket 48213, the customer confirmed the fix works", V(id=48213, res="fixed")),
        Run("Mark #50122 as done, it was a duplicate of #50110", V(id=50122, res="duplicate")),
        Run("close out ticket 49007 — user never responded", V(id=49007, res="no_response"), explore=0),
    ),
    fail=Fail("Please close 51200", V(id=51200, res="fixed"), "retry", repeats=2),
    tests=(
        Task("Ticket 60231 is resolved, close it", V(id=60231, res="fixed")),
        Task("Close #61877; it turned out to be a user error", V(id=61877, res="user_error")),
        Task("We shipped the patch for ticket 59904, please close it", V(id=59904, res="fixed")),
        Task("Close the ticket 62015, duplicate of 62001", V(id=62015, res="duplicate")),
        Task("Wrap up ticket 60550 as the customer says all good now", V(id=60550, res="fixed")),
    ),
)

_NO_URGENT = "Forbidden: agents cannot set priority 'urgent'"

TICKET_ESCALATE = Family(
    id="ticket-escalate",
    sibling="ticket-close-resolution",
    domain="support",
    kind="tool_choice",
    rule="Urgent priority can only be reached through escalate_ticket, not update_ticket.",
    task_type="operation",
    tools=_TICKET_TOOLS,
    naive=lambda v: [err("update_ticket", {"ticket_id": v.id, "priority": "urgent"}, _NO_URGENT)],
    fix=A("escalate_ticket",
          lambda v: [ok("escalate_ticket", {"ticket_id": v.id, "reason": v.reason}, {"priority": "urgent", "group": "tier2"})],
          names=(r"escalate_ticket",)),
    wrong=(
        A("assign to tier 2 first",
          lambda v: [ok("assign_ticket", {"ticket_id": v.id, "group": "tier2"}, "assigned"),
                     err("update_ticket", {"ticket_id": v.id, "priority": "urgent"}, _NO_URGENT)],
          names=(r"assign_ticket",)),
        A("numeric priority",
          lambda v: [err("update_ticket", {"ticket_id": v.id, "priority": 1},
                         "ValidationError: priority must be one of low, normal, high, urgent")],
          names=(r"priority.{0,30}\b(1|numeric|number)\b",)),
        A("reply to the customer first",
          lambda v: [ok("reply_ticket", {"ticket_id": v.id, "body": "We are on it."}, "sent"),
                     err("update_ticket", {"ticket_id": v.id, "priority": "urgent"}, _NO_URGENT)],
          names=(r"reply_ticket",)),
    ),
    train=(
        Run("Make ticket 48877 urgent, the customer's checkout is down", V(id=48877, reason="checkout down")),
        Run("Raise #50311 to top priority, enterprise client reports data loss", V(id=50311, reason="data loss")),
        Run("ticket 49550 needs urgent attention, their whole team is locked out", V(id=49550, reason="team locked out"), explore=0),
    ),
    tests=(
        Task("Bump ticket 60412 to urgent; production is down for them", V(id=60412, reason="production down")),
        Task("Ticket 61230 must be handled right away — set it to the highest priority", V(id=61230, reason="customer blocked")),
        Task("Mark #59871 as urgent, the CEO of the client is on the thread", V(id=59871, reason="executive escalation")),
        Task("Treat ticket 62200 as an emergency, payments are failing", V(id=62200, reason="payments failing")),
        Task("Prioritize #60777 immediately; security incident reported", V(id=60777, reason="security incident")),
    ),
)


# --------------------------------------------------------------------------------------------
# 10. git: a shared branch vs the protected main
# --------------------------------------------------------------------------------------------
_GIT_TOOLS = ("git_status", "git_commit", "git_push", "git_pull", "create_pull_request")

GIT_PULL_REBASE = Family(
    id="git-pull-rebase",
    sibling="git-protected-main",
    domain="git",
    kind="order",
    rule="Feature branches also get commits from the CI bot: git_pull --rebase before git_push.",
    task_type="operation",
    tools=_GIT_TOOLS,
    naive=lambda v: [err("git_push", {"remote": "origin", "branch": v.br},
                         f"Rejected: non-fast-forward; the remote branch {v.br} contains work you do not have locally")],
    fix=A("git_pull with rebase, then git_push",
          lambda v: [ok("git_pull", {"remote": "origin", "branch": v.br, "rebase": True}, "Successfully rebased"),
                     ok("git_push", {"remote": "origin", "branch": v.br}, f"{v.br} -> {v.br}")],
          names=(r"git_pull\b", r"git_push|push")),
    wrong=(
        A("force push",
          lambda v: [err("git_push", {"remote": "origin", "branch": v.br, "force": True},
                         "Rejected: force-push is disabled on shared branches")],
          names=(r"\bforce\b",)),
        A("check git_status first",
          lambda v: [ok("git_status", {}, "Your branch is ahead of 'origin' by 1 commit"),
                     err("git_push", {"remote": "origin", "branch": v.br},
                         f"Rejected: non-fast-forward; the remote branch {v.br} contains work you do not have locally")],
          names=(r"git_status",)),
        A("open a pull request instead",
          lambda v: [err("create_pull_request", {"head": v.br, "base": "main", "title": v.br},
                         f"UnprocessableEntity: no commits between main and {v.br} on the remote")],
          names=(r"create_pull_request",)),
    ),
    train=(
        Run("Push my changes on feature/login-form", V(br="feature/login-form")),
        Run("Upload the commits on branch fix/typo-readme to origin", V(br="fix/typo-readme")),
        Run("push bugfix/null-check, the CI bot added a commit there", V(br="bugfix/null-check"), explore=0),
    ),
    fail=Fail("push release/2.3 to the remote", V(br="release/2.3"), "retry", repeats=2),
    tests=(
        Task("Push my local commits on feature/dark-mode to the remote", V(br="feature/dark-mode")),
        Task("Send the branch chore/deps-bump up to GitHub", V(br="chore/deps-bump")),
        Task("Publish my work on feature/export-csv", V(br="feature/export-csv")),
        Task("Sync my commits to origin for branch refactor/auth-client", V(br="refactor/auth-client")),
        Task("Push hotfix/timezone-offset please", V(br="hotfix/timezone-offset")),
    ),
)

_PROTECTED = "Protected: branch 'main' is protected; direct pushes are not allowed"

GIT_PROTECTED_MAIN = Family(
    id="git-protected-main",
    sibling="git-pull-rebase",
    domain="git",
    kind="tool_choice",
    rule="main is protected: push a branch and open a pull request with create_pull_request.",
    task_type="operation",
    tools=_GIT_TOOLS,
    naive=lambda v: [err("git_push", {"remote": "origin", "branch": "main"}, _PROTECTED)],
    fix=A("push a branch and create_pull_request",
          lambda v: [ok("git_push", {"remote": "origin", "branch": v.br}, f"{v.br} -> {v.br}"),
                     ok("create_pull_request", {"head": v.br, "base": "main", "title": v.title}, {"number": v.pr})],
          names=(r"create_pull_request|pull request",)),
    wrong=(
        A("force push",
          lambda v: [err("git_push", {"remote": "origin", "branch": "main", "force": True}, _PROTECTED)],
          names=(r"\bforce\b",)),
        A("pull first",
          lambda v: [ok("git_pull", {"remote": "origin", "branch": "main", "rebase": True}, "Already up to date."),
                     err("git_push", {"remote": "origin", "branch": "main"}, _PROTECTED)],
          names=(r"git_pull\b",)),
        A("push to master",
          lambda v: [err("git_push", {"remote": "origin", "branch": "master"}, "NotFound: remote branch 'master' does not exist")],
          names=(r"\bmaster\b",)),
    ),
    train=(
        Run("Push this hotfix straight to main", V(br="hotfix/login-500", title="Fix 500 on login", pr=412)),
        Run("Get my commit for the broken footer link onto main", V(br="fix/footer-link", title="Fix footer link", pr=418)),
        Run("ship the version bump to main", V(br="chore/bump-1.8.0", title="Bump to 1.8.0", pr=423), explore=1),
    ),
    fail=Fail("Push the changelog to main", V(br="docs/changelog", title="Changelog", pr=0), "feedback",
              calls=lambda v: [err("git_push", {"remote": "origin", "branch": "main", "force": True}, _PROTECTED)],
              feedback="Never force-push to main. Open a pull request like everyone else."),
    tests=(
        Task("Put my typo fix directly on main", V(br="fix/typo", title="Fix typo", pr=501)),
        Task("Merge my local change into main and push it", V(br="feat/local-change", title="Local change", pr=502)),
        Task("Deploy the config change by pushing it to the main branch", V(br="config/timeouts", title="Config change", pr=503)),
        Task("Push the README update to main", V(br="docs/readme", title="README update", pr=504)),
        Task("Land my security patch on main right now", V(br="security/patch-cve", title="Security patch", pr=505)),
    ),
)


# --------------------------------------------------------------------------------------------
# 11. chat: a channel id vs a direct message
# --------------------------------------------------------------------------------------------
_CHAT_TOOLS = ("post_message", "list_channels", "send_dm", "lookup_user")

CHAT_CHANNEL_ID = Family(
    id="chat-channel-id",
    sibling="chat-dm-user",
    domain="chat",
    kind="precondition",
    rule="post_message takes a channel id (C...), not a #name: resolve it with list_channels first.",
    task_type="operation",
    tools=_CHAT_TOOLS,
    naive=lambda v: [err("post_message", {"channel": f"#{v.ch}", "text": v.text}, f"channel_not_found: '#{v.ch}'")],
    fix=A("list_channels, then post_message with the id",
          lambda v: [ok("list_channels", {"name": v.ch}, [{"id": v.cid, "name": v.ch}]),
                     ok("post_message", {"channel": v.cid, "text": v.text}, {"ts": "1718000000.0001"})],
          names=(r"list_channels",)),
    wrong=(
        A("drop the # from the name",
          lambda v: [err("post_message", {"channel": v.ch, "text": v.text}, f"channel_not_found: '{v.ch}'")],
          names=(r"without (the )?#|(drop|remove|strip)\w* (the )?#|leading #",)),
        A("look the channel up as a user",
          lambda v: [err("lookup_user", {"name": v.ch}, f"user_not_found: '{v.ch}'")],
          names=(r"lookup_user",)),
        A("send a DM instead",
          lambda v: [err("send_dm", {"user": f"#{v.ch}", "text": v.text}, f"user_not_found: '#{v.ch}'")],
          names=(r"send_dm",)),
    ),
    train=(
        Run("Post in #deploys that v2.4.1 is rolling out", V(ch="deploys", cid="C04TQ2X9A", text="v2.4.1 is rolling out")),
        Run("Tell the #support-eu channel the outage is over", V(ch="support-eu", cid="C02KD81LM", text="The outage is over.")),
        Run("announce the all-hands in #general for Friday 4pm", V(ch="general", cid="C0100GEN1", text="All-hands Friday 4pm"), explore=0),
    ),
    fail=Fail("Share the incident summary in #incidents", V(ch="incidents", cid="C03INC777", text="Incident summary"), "retry", repeats=2),
    tests=(
        Task("Let everyone in #release-train know the freeze starts at noon", V(ch="release-train", cid="C05REL001", text="Freeze at noon")),
        Task("Post the weekly metrics summary to #growth", V(ch="growth", cid="C05GRW002", text="Weekly metrics")),
        Task("Notify #oncall that the database failover finished", V(ch="oncall", cid="C05ONC003", text="DB failover finished")),
        Task("Write in the #design channel that the new mockups are in Figma", V(ch="design", cid="C05DES004", text="Mockups in Figma")),
        Task("Drop a message in #random: cake in the kitchen!", V(ch="random", cid="C05RND005", text="Cake in the kitchen!")),
    ),
)

CHAT_DM_USER = Family(
    id="chat-dm-user",
    sibling="chat-channel-id",
    domain="chat",
    kind="tool_choice",
    rule="Private messages go through send_dm; post_message only posts to channels.",
    task_type="operation",
    tools=_CHAT_TOOLS,
    naive=lambda v: [err("post_message", {"channel": f"@{v.handle}", "text": v.text}, f"channel_not_found: '@{v.handle}'")],
    fix=A("send_dm", lambda v: [ok("send_dm", {"user": v.handle, "text": v.text}, {"ts": "1718000000.0002"})],
          names=(r"send_dm",)),
    wrong=(
        A("resolve the channel with list_channels",
          lambda v: [ok("list_channels", {"name": v.handle}, []),
                     err("post_message", {"channel": f"@{v.handle}", "text": v.text}, f"channel_not_found: '@{v.handle}'")],
          names=(r"list_channels",)),
        A("post to the user's id",
          lambda v: [ok("lookup_user", {"name": v.handle}, {"id": v.uid}),
                     err("post_message", {"channel": v.uid, "text": v.text}, f"channel_not_found: '{v.uid}'")],
          names=(r"lookup_user",)),
        A("drop the @ from the handle",
          lambda v: [err("post_message", {"channel": v.handle, "text": v.text}, f"channel_not_found: '{v.handle}'")],
          names=(r"without (the )?@|(drop|remove|strip)\w* (the )?@|leading @",)),
    ),
    train=(
        Run("Send Anna a private message reminding her about the review", V(handle="anna.kowalski", uid="U01AK", text="Reminder: review at 3")),
        Run("DM @tom.becker that his PR is approved", V(handle="tom.becker", uid="U02TB", text="Your PR is approved")),
        Run("message Lucia directly: the client call moved to 3pm", V(handle="lucia.ferrari", uid="U03LF", text="Client call moved to 3pm"),
            explore=1),
    ),
    fail=Fail("Quietly tell Jamal his promotion went through", V(handle="jamal.haddad", uid="U04JH", text="Congrats!"), "feedback",
              calls=lambda v: [ok("post_message", {"channel": "C0100GEN1", "text": "Jamal's promotion went through!"}, {"ts": "1"})],
              feedback="That was supposed to be private, not posted in #general!"),
    tests=(
        Task("Privately tell Marco that the budget was approved", V(handle="marco.bianchi", uid="U10MB", text="Budget approved")),
        Task("Ping Sofia one-on-one and ask if she can cover the on-call shift",
             V(handle="sofia.lindqvist", uid="U11SL", text="Can you cover on-call?")),
        Task("Send a direct message to Ben with the meeting notes", V(handle="ben.carter", uid="U12BC", text="Meeting notes")),
        Task("Let Yuki know personally that her access request is done", V(handle="yuki.tanaka", uid="U13YT", text="Access granted")),
        Task("Message Omar just between us: the reorg announcement is on Monday",
             V(handle="omar.farouk", uid="U14OF", text="Reorg announcement Monday")),
    ),
)


# --------------------------------------------------------------------------------------------
# 12. cloud VMs: two different orders of operations
# --------------------------------------------------------------------------------------------
_VM_TOOLS = ("describe_instance", "stop_instance", "start_instance", "resize_instance", "create_snapshot", "delete_volume")


def _running(v) -> str:
    return f"IncorrectInstanceState: instance {v.id} is running; its type cannot be changed"


VM_STOP_RESIZE = Family(
    id="vm-stop-resize",
    sibling="vm-snapshot-delete",
    domain="cloud",
    kind="order",
    rule="An instance must be stopped before resize_instance, and started again after.",
    task_type="operation",
    tools=_VM_TOOLS,
    naive=lambda v: [err("resize_instance", {"instance_id": v.id, "instance_type": v.type}, _running(v))],
    fix=A("stop_instance, resize_instance, start_instance",
          lambda v: [ok("stop_instance", {"instance_id": v.id}, "stopped"),
                     ok("resize_instance", {"instance_id": v.id, "instance_type": v.type}, {"instance_type": v.type}),
                     ok("start_instance", {"instance_id": v.id}, "running")],
          names=(r"stop_instance", r"resize_instance|resiz|instance type")),
    wrong=(
        A("describe the instance first",
          lambda v: [ok("describe_instance", {"instance_id": v.id}, {"state": "running"}),
                     err("resize_instance", {"instance_id": v.id, "instance_type": v.type}, _running(v))],
          names=(r"describe_instance",)),
        A("take a snapshot first",
          lambda v: [ok("create_snapshot", {"volume_id": f"vol-of-{v.id}"}, {"snapshot_id": "snap-01"}),
                     err("resize_instance", {"instance_id": v.id, "instance_type": v.type}, _running(v))],
          names=(r"create_snapshot",)),
        A("force the resize",
          lambda v: [err("resize_instance", {"instance_id": v.id, "instance_type": v.type, "force": True},
                         "ValidationError: unknown parameter 'force'")],
          names=(r"\bforce\b",)),
    ),
    train=(
        Run("Upgrade i-0a1b2c3d4e to m5.2xlarge, it's running out of memory", V(id="i-0a1b2c3d4e", type="m5.2xlarge")),
        Run("resize the build server i-07f3e9a1b2 to c6i.4xlarge", V(id="i-07f3e9a1b2", type="c6i.4xlarge")),
        Run("Downsize instance i-0c9d8e7f6a to t3.medium to save money", V(id="i-0c9d8e7f6a", type="t3.medium"), explore=0),
    ),
    tests=(
        Task("Change instance i-0b7a6c5d4e to r6i.large", V(id="i-0b7a6c5d4e", type="r6i.large")),
        Task("Give the analytics box i-09e8d7c6b5 more CPU: make it c6i.8xlarge", V(id="i-09e8d7c6b5", type="c6i.8xlarge")),
        Task("Move i-01a2b3c4d5 to a smaller type, t3.small", V(id="i-01a2b3c4d5", type="t3.small")),
        Task("Scale up the database VM i-0f1e2d3c4b to m6i.4xlarge", V(id="i-0f1e2d3c4b", type="m6i.4xlarge")),
        Task("Switch i-0d4c3b2a19 to the m5.xlarge instance type", V(id="i-0d4c3b2a19", type="m5.xlarge")),
    ),
)


def _denied(v) -> str:
    return f"PolicyDenied: volume {v.vol} is tagged env=prod and has no snapshot from the last 24h"


VM_SNAPSHOT_DELETE = Family(
    id="vm-snapshot-delete",
    sibling="vm-stop-resize",
    domain="cloud",
    kind="order",
    rule="Production volumes can only be deleted after create_snapshot.",
    task_type="operation",
    tools=_VM_TOOLS,
    naive=lambda v: [err("delete_volume", {"volume_id": v.vol}, _denied(v))],
    fix=A("create_snapshot, then delete_volume",
          lambda v: [ok("create_snapshot", {"volume_id": v.vol}, {"snapshot_id": f"snap-{v.vol[4:]}"}),
                     ok("delete_volume", {"volume_id": v.vol}, "deleted")],
          names=(r"create_snapshot|snapshot", r"delete_volume|delet")),
    wrong=(
        A("stop the attached instance first",
          lambda v: [ok("stop_instance", {"instance_id": v.inst}, "stopped"),
                     err("delete_volume", {"volume_id": v.vol}, _denied(v))],
          names=(r"stop_instance",)),
        A("describe the instance first",
          lambda v: [ok("describe_instance", {"instance_id": v.inst}, {"volumes": [v.vol]}),
                     err("delete_volume", {"volume_id": v.vol}, _denied(v))],
          names=(r"describe_instance",)),
        A("force the delete",
          lambda v: [err("delete_volume", {"volume_id": v.vol, "force": True}, _denied(v))],
          names=(r"\bforce\b",)),
    ),
    train=(
        Run("Delete volume vol-0a12bc34de56, it's no longer attached to anything", V(vol="vol-0a12bc34de56", inst="i-0aa0000001")),
        Run("remove the old data disk vol-0f9e8d7c6b5a from production", V(vol="vol-0f9e8d7c6b5a", inst="i-0aa0000002")),
        Run("Clean up vol-03c4d5e6f7a8, the migration finished", V(vol="vol-03c4d5e6f7a8", inst="i-0aa0000003"), explore=2),
    ),
    fail=Fail("Get rid of vol-0123abcd4567", V(vol="vol-0123abcd4567", inst="i-0aa0000004"), "retry", repeats=2),
    tests=(
        Task("Delete the unused EBS volume vol-0aa11bb22cc3", V(vol="vol-0aa11bb22cc3", inst="i-0bb0000001")),
        Task("Free up storage by removing vol-0dd44ee55ff6", V(vol="vol-0dd44ee55ff6", inst="i-0bb0000002")),
        Task("Drop volume vol-07a8b9c0d1e2, the old Postgres replica's disk", V(vol="vol-07a8b9c0d1e2", inst="i-0bb0000003")),
        Task("Permanently delete disk vol-0e1f2a3b4c5d", V(vol="vol-0e1f2a3b4c5d", inst="i-0bb0000004")),
        Task("We don't need vol-0c3d4e5f6a7b anymore, delete it", V(vol="vol-0c3d4e5f6a7b", inst="i-0bb0000005")),
    ),
)


# In pair order: siblings are adjacent, so a prefix of whole pairs is a valid subset.
FAMILIES: tuple[Family, ...] = (
    WEATHER_CITY, FLIGHT_AIRPORT,
    SQL_EVENTS_LIMIT, SQL_QUOTED_COLUMNS,
    FILES_MKDIR_UPLOAD, FILES_DELETE_RECURSIVE,
    CALENDAR_BOOK_ROOM, EMAIL_LOOKUP_CONTACT,
    REFUND_TOOL, MINOR_UNITS,
    K8S_SCALE_NAMESPACE, K8S_LOGS_CONTAINER,
    HTTP_AUTH_TOKEN, HTTP_IDEMPOTENCY,
    SEARCH_NEWS_DATE, SEARCH_WIKI_INTERNAL,
    TICKET_CLOSE_RESOLUTION, TICKET_ESCALATE,
    GIT_PULL_REBASE, GIT_PROTECTED_MAIN,
    CHAT_CHANNEL_ID, CHAT_DM_USER,
    VM_STOP_RESIZE, VM_SNAPSHOT_DELETE,
)


def select(n: int | None) -> tuple[Family, ...]:
    """The first n families, rounded up to whole sibling pairs."""
    if not n or n >= len(FAMILIES):
        return FAMILIES
    n = n + (n % 2)
    return FAMILIES[:n]
