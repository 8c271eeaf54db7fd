"""blind4 part 3: festival stalls, aircraft line maintenance, power distribution, rail freight, bulky waste, elections."""
from dsl import E, F, FB, OK, R, S, TX, U

STALL_TOOLS = ["get_vendor", "get_vendor_documents", "list_zones", "allocate_stall", "upload_vendor_document"]
STALL_ERR = "Allocation failed"

MX_TOOLS = ["get_aircraft_status", "get_task_card", "defer_item", "sign_off_task", "release_aircraft"]
MX_ERR = "Release blocked: open items"

GRID_TOOLS = ["get_feeder", "notify_customers", "list_sensitive_customers", "arrange_backup_power", "issue_switching_order"]
GRID_ERR = "Switching order rejected by control"

RAIL_TOOLS = ["get_wagon_list", "get_route", "create_train", "submit_consist"]
RAIL_ERR = "Consist validation failed"

WASTE_TOOLS = ["get_address", "list_collection_dates", "book_bulky_pickup", "cancel_booking"]
WASTE_ERR = "Booking not accepted"

POLL_TOOLS = ["get_worker", "get_candidates", "list_stations", "book_training", "assign_poll_worker"]
POLL_ERR = "Assignment not permitted"

FAMILIES = [
    F("events-gas-zone", "festival events", STALL_TOOLS, "events-insurance", "operation",
      "Vendors that cook with bottled gas (get_vendor cooking: LPG/propane) may only go in zones with gas_allowed: true "
      "(list_zones); allocate them to one of those instead of the requested zone.",
      ["gas_allowed", "gas-approved zone", "lpg zone"],
      [
          TX("fail-fix-reasoned+value-from-result", "Put Paella Loca in the Riverside zone for Saturday", "success",
             U("Put Paella Loca in the Riverside zone for Saturday"),
             OK("get_vendor", {"vendor": "V-1102"}, {"name": "Paella Loca", "type": "hot food", "cooking": "gas (2 x 47kg propane)", "first_year": False}),
             E("allocate_stall", {"vendor": "V-1102", "zone": "riverside", "day": "SAT"}, STALL_ERR),
             R("They've traded here before. They cook on propane, and bottled gas is only allowed in some zones."),
             OK("list_zones", {"day": "SAT"}, {"zones": [{"zone": "riverside", "gas_allowed": False, "free": 4},
                                                        {"zone": "food-court-b", "gas_allowed": True, "free": 2}]}),
             OK("allocate_stall", {"vendor": "V-1102", "zone": "food-court-b", "day": "SAT"}, {"stall": "FCB-07"})),
          TX("two-lessons+fail-fix-reasoned+long-noisy", "Allocate the Smokehouse Brothers a pitch on the Main Lawn all weekend, the Crêpe Cart next to them", "partial",
             U("Allocate the Smokehouse Brothers (V-1130) a pitch on the Main Lawn for the whole weekend, and the Crêpe Cart (V-1131) next to them"),
             OK("get_vendor", {"vendor": "V-1130"}, {"name": "Smokehouse Brothers", "cooking": "gas (LPG smoker)", "first_year": False}),
             OK("get_vendor", {"vendor": "V-1131"}, {"name": "Crêpe Cart", "cooking": "electric", "first_year": False}),
             E("allocate_stall", {"vendor": "V-1131", "zone": "main-lawn", "days": ["SAT", "SUN"]}, "Allocation failed: days must be a single day"),
             OK("allocate_stall", {"vendor": "V-1131", "zone": "main-lawn", "day": "SAT"}, {"stall": "ML-03"}),
             OK("allocate_stall", {"vendor": "V-1131", "zone": "main-lawn", "day": "SUN"}, {"stall": "ML-03"}),
             E("allocate_stall", {"vendor": "V-1130", "zone": "main-lawn", "day": "SAT"}, STALL_ERR),
             OK("list_zones", {"day": "SAT"}, {"zones": [{"zone": "main-lawn", "gas_allowed": False, "free": 3},
                                                        {"zone": "food-court-b", "gas_allowed": True, "free": 2}]}),
             OK("allocate_stall", {"vendor": "V-1130", "zone": "food-court-b", "day": "SAT"}, {"stall": "FCB-02"}),
             OK("allocate_stall", {"vendor": "V-1130", "zone": "food-court-b", "day": "SUN"}, {"stall": "FCB-02"}),
             R("Two things learned: allocate_stall takes one day per call, and a vendor cooking on LPG can only go in a zone where gas "
               "is allowed, so the Smokehouse is in Food Court B, not next to the crêpes as asked.")),
      ],
      [
          "Allocation failed putting the wood-fired pizza van (it has a gas backup burner) in the Orchard zone",
          "give the Thai street food stall (propane woks) a pitch by the main stage",
          "Allocation failed for V-1208, documents are all in, it's the churros van with the bottled-gas fryer",
          "The burger guys who came last year are back and want the same spot near the entrance. They run two big griddles off "
          "propane cylinders and their paperwork was approved last week. I keep trying the entrance zone and it just says allocation "
          "failed, can you sort it?",
      ]),
    F("events-insurance", "festival events", STALL_TOOLS, "events-gas-zone", "operation",
      "Before allocating a first-time vendor, check get_vendor_documents; when the public liability insurance certificate is "
      "missing, upload_vendor_document with the vendor's certificate first, then allocate.",
      ["liability insurance", "insurance certificate", "upload_vendor_document"],
      [
          TX("wrong-alt+fail-fix-reasoned", "New trader Honey & Hive, jars and candles, put them in the Craft Tent Saturday", "success",
             U("New trader: Honey & Hive (V-1150), jars and candles, put them in the Craft Tent Saturday"),
             E("allocate_stall", {"vendor": "V-1150", "zone": "craft-tent", "day": "SAT"}, STALL_ERR),
             OK("list_zones", {"day": "SAT"}, {"zones": [{"zone": "craft-tent", "gas_allowed": False, "free": 6}]}),
             R("The tent has room. Maybe Saturday is closed for new traders; try Sunday."),
             E("allocate_stall", {"vendor": "V-1150", "zone": "craft-tent", "day": "SUN"}, STALL_ERR),
             OK("get_vendor_documents", {"vendor": "V-1150"}, {"food_hygiene": "n/a", "public_liability": "missing", "risk_assessment": "ok"}),
             R("A new vendor with no public liability insurance on file: allocation is blocked until it's uploaded. The trader emailed "
               "a certificate."),
             OK("upload_vendor_document", {"vendor": "V-1150", "kind": "public_liability", "file": "hh_pli_2026.pdf"}, {"status": "verified"}),
             OK("allocate_stall", {"vendor": "V-1150", "zone": "craft-tent", "day": "SAT"}, {"stall": "CT-14"})),
          TX("fail-fix-silent+explain-after+note-terse", "allocate V-1162 (Nordic Knits, first year) to Market Row on Sunday", "success",
             U("allocate V-1162 (Nordic Knits, first year) to Market Row on Sunday"),
             E("allocate_stall", {"vendor": "V-1162", "zone": "market-row", "day": "SUN"}, STALL_ERR),
             OK("get_vendor_documents", {"vendor": "V-1162"}, {"public_liability": "missing", "risk_assessment": "ok"}),
             OK("upload_vendor_document", {"vendor": "V-1162", "kind": "public_liability", "file": "nordic_knits_pli.pdf"}, {"status": "verified"}),
             OK("allocate_stall", {"vendor": "V-1162", "zone": "market-row", "day": "SUN"}, {"stall": "MR-09"}),
             R("Their cover certificate had to be on file first.")),
      ],
      [
          "Allocation failed for a brand new jewellery stall in the craft tent",
          "first-timers Pickle Jar Co want a table in Market Row on Saturday, all electric, no cooking",
          "Allocation failed for V-1240; they don't cook anything, it's their first festival",
          "A woman who makes leather bags messaged us last week, she's never traded with us before, and she'd love a spot in the craft "
          "tent on Sunday. I've made her a vendor record but the allocation just fails. There's plenty of space in there. Am I doing something wrong?",
      ]),
    F("mx-mel-deferral", "aircraft maintenance", MX_TOOLS, "mx-independent-inspection", "operation",
      "When an inoperative item may be flown under the MEL (get_aircraft_status gives its mel_ref), raise a deferral with defer_item "
      "citing that MEL reference (and placard) before release_aircraft; do not try to sign it off as fixed.",
      ["defer_item", "mel reference", "deferral"],
      [
          TX("fail-fix-reasoned+value-from-result", "Release G-LNDA for the 14:20, the reading light on row 12 is u/s", "success",
             U("Release G-LNDA for the 14:20, tech log shows the reading light at 12F u/s"),
             OK("get_aircraft_status", {"tail": "G-LNDA"},
                {"open_items": [{"id": "TL-5512", "desc": "Reading light 12F inop", "mel_ref": "MEL 33-24-01 Cat C", "rectified": False}]}),
             E("release_aircraft", {"tail": "G-LNDA"}, MX_ERR),
             R("The light isn't fixed and there's no spare; it can be deferred under MEL 33-24-01 Cat C. Raise that, then release."),
             OK("defer_item", {"item": "TL-5512", "mel_ref": "MEL 33-24-01 Cat C", "placard": True}, {"deferral": "ADD-3310", "due": "2026-11-22"}),
             OK("release_aircraft", {"tail": "G-LNDA"}, {"released": True, "crs": "CRS-77120"})),
          TX("wrong-alt+user-corrects+note-user-words", "get G-LNDC out, the APU bleed valve fault from last night is still open", "success",
             U("get G-LNDC out, the APU bleed valve fault from last night is still open"),
             OK("get_aircraft_status", {"tail": "G-LNDC"},
                {"open_items": [{"id": "TL-5530", "desc": "APU bleed valve fails to open", "mel_ref": "MEL 49-10-02 Cat C", "rectified": False}]}),
             R("Sign the item off so the release clears."),
             E("sign_off_task", {"item": "TL-5530", "engineer": "E-221"}, "Sign-off rejected: task card incomplete"),
             U("Don't sign it off, nobody has fixed it! It goes in the book as a carried-forward defect, we fly without the APU bleed and "
               "use the ground air cart for starts. 49-10-02."),
             OK("defer_item", {"item": "TL-5530", "mel_ref": "MEL 49-10-02 Cat C", "placard": True, "ops_procedure": "ground air for engine start"},
                {"deferral": "ADD-3322"}),
             OK("release_aircraft", {"tail": "G-LNDC"}, {"released": True})),
      ],
      [
          "Release blocked: open items on G-LNDF, one lav light is inop and there's no spare in stores",
          "need G-LNDB out for the 06:10, galley oven 3 is dead and parts won't be here till Thursday",
          "release G-LNDK, the coffee maker is u/s, the book lets us fly with it for 10 days",
          "Hi, line maintenance night shift here. One of the cabin PA speakers at row 20 is dead on G-LNDE, we haven't got a "
          "replacement and the aircraft is due out in 40 minutes. The release keeps getting blocked because of open items. It's a minor "
          "thing, we fly with these all the time. What's the correct way to get it out?",
      ]),
    F("mx-independent-inspection", "aircraft maintenance", MX_TOOLS, "mx-mel-deferral", "operation",
      "When the task touched flight controls (get_task_card requires_independent_inspection), a second, different licensed engineer "
      "must sign the independent inspection (sign_off_task role independent_inspector) before release; the certifying engineer's own "
      "signature does not count.",
      ["independent inspection", "second engineer", "different engineer"],
      [
          TX("fail-fix-reasoned+value-from-result", "Release G-LNDH, aileron cable tension adjusted and signed by Mo", "success",
             U("Release G-LNDH, aileron cable tension adjusted and signed by Mo (E-118)"),
             OK("get_aircraft_status", {"tail": "G-LNDH"},
                {"open_items": [{"id": "TL-5540", "desc": "L aileron cable tension adjusted", "rectified": True, "signed_by": "E-118",
                                 "inspection": "outstanding"}]}),
             E("release_aircraft", {"tail": "G-LNDH"}, MX_ERR),
             OK("get_task_card", {"item": "TL-5540"}, {"ata": "27", "requires_independent_inspection": True, "certified_by": "E-118"}),
             R("Flight control work needs a duplicate inspection by another licensed engineer; Mo certified the job, so he can't also inspect it."),
             OK("sign_off_task", {"item": "TL-5540", "engineer": "E-207", "role": "independent_inspector"}, {"signed": True}),
             OK("release_aircraft", {"tail": "G-LNDH"}, {"released": True})),
          TX("blind-retries+note-rambling", "release G-LNDJ please, elevator trim tab actuator replaced, Kay signed it", "failure",
             U("release G-LNDJ please, elevator trim tab actuator replaced, Kay signed it"),
             E("release_aircraft", {"tail": "G-LNDJ"}, MX_ERR),
             E("sign_off_task", {"item": "TL-5561", "engineer": "E-140", "role": "independent_inspector"}, "Sign-off rejected"),
             E("release_aircraft", {"tail": "G-LNDJ"}, MX_ERR),
             E("release_aircraft", {"tail": "G-LNDJ"}, MX_ERR),
             FB("We were stuck on that for an hour and the crew were sat in the crew room waiting. Kay did the job, so she can't be the one "
                "who checks it, not on a trim tab or anything else on the flying controls, the rules want a second pair of eyes with a "
                "licence. I ended up dragging Raj off the other stand to do it. Next time put someone else on that check straight away.", "negative")),
      ],
      [
          "Release blocked: open items on G-LNDM after the rudder pedal rigging check; the job is signed",
          "release G-LNDP, flap track roller changed and certified by Tomasz last night",
          "why won't G-LNDR release? spoiler actuator swapped, the engineer signed both boxes himself",
          "Night shift replaced the elevator feel unit on G-LNDS and the certifying engineer signed everything off before going home at 6. "
          "Now the day shift can't release it, the system says open items but every box on the task card is ticked. It's due out at 09:30.",
      ]),
    F("grid-customer-notice", "power distribution", GRID_TOOLS, "grid-life-support", "operation",
      "A planned outage needs the affected customers told at least 48 hours ahead: call notify_customers for the feeder first and "
      "issue the switching order for a start 48 hours or more after the notice.",
      ["notify_customers", "48 hours", "advance notice"],
      [
          TX("fail-fix-reasoned", "Plan an outage on feeder F-117 tomorrow 09:00-13:00 to replace the transformer on Elm Row", "success",
             U("Plan an outage on feeder F-117 tomorrow 09:00-13:00 to replace the pole-mounted transformer on Elm Row"),
             OK("get_feeder", {"feeder": "F-117"}, {"customers": 214, "sensitive_customers": 0, "substation": "Hartley Primary"}),
             E("issue_switching_order", {"feeder": "F-117", "action": "open", "start": "2026-11-13T09:00", "end": "2026-11-13T13:00", "planned": True}, GRID_ERR),
             R("Nobody sensitive on F-117. Planned outages need the customers told at least two days ahead; tomorrow is too soon, so "
               "notify now and move the work to the 15th."),
             OK("notify_customers", {"feeder": "F-117", "start": "2026-11-15T09:00", "end": "2026-11-15T13:00", "channels": ["sms", "letter"]},
                {"notified": 214, "sent_at": "2026-11-12T10:05"}),
             OK("issue_switching_order", {"feeder": "F-117", "action": "open", "start": "2026-11-15T09:00", "end": "2026-11-15T13:00", "planned": True},
                {"order": "SO-7731", "status": "approved"})),
          TX("rule-first+note-terse", "Book switching on F-240 for the cable joint on Station Rd, Thursday 08:00-12:00", "success",
             U("Book switching on F-240 for the cable joint on Station Rd, Thursday 08:00-12:00"),
             OK("get_feeder", {"feeder": "F-240"}, {"customers": 96, "sensitive_customers": 0}),
             R("Planned work: customers must hear 48h ahead. Thursday is three days out, so notify now, then switch."),
             OK("notify_customers", {"feeder": "F-240", "start": "2026-11-19T08:00", "end": "2026-11-19T12:00", "channels": ["sms", "letter"]},
                {"notified": 96}),
             OK("issue_switching_order", {"feeder": "F-240", "action": "open", "start": "2026-11-19T08:00", "end": "2026-11-19T12:00", "planned": True},
                {"order": "SO-7760", "status": "approved"})),
      ],
      [
          "Switching order rejected by control for tomorrow morning's transformer swap on F-305",
          "take F-122 off for 3 hours this afternoon to re-tension the overhead line, no hospitals or vulnerable people on it",
          "Switching order rejected by control: planned pole replacement Friday, it's Thursday lunchtime now",
          "We've got a crew free tomorrow so I want to do the overdue insulator replacement on F-188 between 10 and 2. I checked the "
          "feeder and there's nobody vulnerable on it. Control keeps rejecting the order though. Can you get it through?",
      ]),
    F("grid-life-support", "power distribution", GRID_TOOLS, "grid-customer-notice", "operation",
      "When list_sensitive_customers shows medically dependent customers on the feeder (dialysis, oxygen, ventilator), "
      "arrange_backup_power (a generator for the outage window) for each before issuing the switching order; notice alone is not enough.",
      ["backup power", "arrange_backup_power", "generator"],
      [
          TX("wrong-alt+fail-fix-reasoned+value-from-result", "Outage on F-162 Monday 09:00-15:00 for the substation rebuild", "success",
             U("Outage on F-162 Monday 09:00-15:00 for the substation rebuild"),
             OK("get_feeder", {"feeder": "F-162"}, {"customers": 380, "sensitive_customers": 2}),
             OK("notify_customers", {"feeder": "F-162", "start": "2026-11-16T09:00", "end": "2026-11-16T15:00", "channels": ["letter"]},
                {"notified": 380, "sent_at": "2026-11-11T09:00"}),
             E("issue_switching_order", {"feeder": "F-162", "action": "open", "start": "2026-11-16T09:00", "end": "2026-11-16T15:00", "planned": True}, GRID_ERR),
             R("The notice went out five days ahead, so that isn't it. There are two sensitive customers on this feeder."),
             OK("list_sensitive_customers", {"feeder": "F-162"},
                {"customers": [{"account": "A-55102", "need": "home dialysis"}, {"account": "A-55340", "need": "oxygen concentrator"}]}),
             OK("arrange_backup_power", {"account": "A-55102", "from": "2026-11-16T08:30", "to": "2026-11-16T15:30"}, {"unit": "GEN-12"}),
             OK("arrange_backup_power", {"account": "A-55340", "from": "2026-11-16T08:30", "to": "2026-11-16T15:30"}, {"unit": "GEN-15"}),
             OK("issue_switching_order", {"feeder": "F-162", "action": "open", "start": "2026-11-16T09:00", "end": "2026-11-16T15:00", "planned": True},
                {"order": "SO-7790", "status": "approved"})),
          TX("fail-fix-silent+no-note+why-in-result", "Switch out F-090 Wednesday 13:00-16:00, notices already went last week", "success",
             U("Switch out F-090 Wednesday 13:00-16:00, notices already went last week"),
             E("issue_switching_order", {"feeder": "F-090", "action": "open", "start": "2026-11-18T13:00", "end": "2026-11-18T16:00", "planned": True}, GRID_ERR),
             OK("list_sensitive_customers", {"feeder": "F-090"}, {"customers": [{"account": "A-60221", "need": "home ventilator"}]}),
             OK("arrange_backup_power", {"account": "A-60221", "from": "2026-11-18T12:30", "to": "2026-11-18T16:30"}, {"unit": "GEN-04"}),
             OK("issue_switching_order", {"feeder": "F-090", "action": "open", "start": "2026-11-18T13:00", "end": "2026-11-18T16:00", "planned": True},
                {"order": "SO-7802", "status": "approved"})),
      ],
      [
          "Switching order rejected by control for F-410, the customers got their letters a week ago",
          "outage on F-133 next Tuesday for the recloser swap; a lady on Church Lane uses a home oxygen machine",
          "Switching order rejected by control: planned work, notice period well met, a dialysis patient on the feeder",
          "We sent out the planned-outage letters for F-276 ten days ago, all fine, but control still won't take the switching order for "
          "Friday. Someone at the depot mentioned a man on Brook Street is on a ventilator at home. Is that why? What do I need to do?",
      ]),
    F("rail-train-length", "rail freight", RAIL_TOOLS, "rail-tank-spacing", "operation",
      "A consist longer than the route's max_length_m (get_route, e.g. 650 m) must be split: create_train for a second service and "
      "submit the wagons across the two trains, each under the limit.",
      ["split", "second train", "max_length_m"],
      [
          TX("fail-fix-reasoned+value-from-result", "Submit the consist for 6M42 Felixstowe to Trafford Park, 38 container flats", "success",
             U("Submit the consist for 6M42 Felixstowe-Trafford Park, 38 container flats"),
             OK("get_wagon_list", {"train": "6M42"}, {"wagons": 38, "length_m": 742, "dangerous_goods_wagons": 0}),
             E("submit_consist", {"train": "6M42", "wagons": "1-38"}, RAIL_ERR),
             OK("get_route", {"route": "FXT-TPK"}, {"max_length_m": 650, "max_tonnes": 1800}),
             R("742 m is over the route's 650 m. Two trains: 20 flats on 6M42 and 18 on a new path."),
             OK("create_train", {"origin": "FXT", "dest": "TPK", "headcode": "6M44"}, {"train": "6M44", "path": "dep 23:40"}),
             OK("submit_consist", {"train": "6M42", "wagons": "1-20"}, {"accepted": True, "length_m": 390}),
             OK("submit_consist", {"train": "6M44", "wagons": "21-38"}, {"accepted": True, "length_m": 352})),
          TX("blind-retries+note-terse", "submit 4E11 consist (Immingham to Doncaster, 44 hoppers)", "failure",
             U("submit 4E11 consist (Immingham - Doncaster, 44 hoppers)"),
             E("submit_consist", {"train": "4E11", "wagons": "1-44"}, RAIL_ERR),
             E("submit_consist", {"train": "4E11", "wagons": "1-44"}, RAIL_ERR),
             E("submit_consist", {"train": "4E11", "wagons": "1-44"}, RAIL_ERR),
             FB("Too long for the route (650 m max). Needed splitting over two trains.", "negative")),
      ],
      [
          "Consist validation failed for 6S70, 41 intermodal flats, no dangerous goods",
          "submit tonight's consist for the Tilbury to Hams Hall liner, 36 container flats, no tanks",
          "Consist validation failed on the Southampton-Wentloog box train, 780 m long",
          "We had extra boxes from the port so the planners loaded 46 flats onto 4O52 tonight, all general cargo, nothing nasty. When "
          "I submit it I get 'Consist validation failed' and no more detail. The train needs to leave at 22:15. What should I change?",
      ]),
    F("rail-tank-spacing", "rail freight", RAIL_TOOLS, "rail-train-length", "operation",
      "Tank wagons of flammable goods (class 3) must not be coupled next to the locomotive: reorder the consist with at least one "
      "non-dangerous buffer (spacer) wagon between the loco and the first tank before submitting.",
      ["buffer wagon", "spacer", "reorder"],
      [
          TX("wrong-alt+fail-fix-reasoned+value-from-result", "Submit 6E54 Lindsey to Kingsbury, 24 TEA tanks plus 2 barrier wagons", "success",
             U("Submit 6E54 Lindsey-Kingsbury, 24 TEA tanks plus 2 barrier wagons"),
             OK("get_wagon_list", {"train": "6E54"},
                {"length_m": 480, "wagons": [{"pos": 1, "type": "TEA", "un": "UN1202", "class": 3}, {"pos": "2-24", "type": "TEA", "class": 3},
                                             {"pos": 25, "type": "barrier"}, {"pos": 26, "type": "barrier"}]}),
             E("submit_consist", {"train": "6E54", "order": "as loaded"}, RAIL_ERR),
             OK("get_route", {"route": "LIN-KBY"}, {"max_length_m": 650}),
             R("480 m is well inside the route. The tanks start right behind the loco; class 3 tanks need a barrier wagon between them "
               "and the locomotive, so one barrier moves to position 1."),
             OK("submit_consist", {"train": "6E54", "order": ["barrier", "TEA x24", "barrier"]}, {"accepted": True})),
          TX("fail-fix-silent+explain-after", "6V30 consist, 20 bitumen tanks then 5 empty box wagons, please submit", "success",
             U("6V30 consist, 20 bitumen tanks then 5 empty box wagons, please submit"),
             E("submit_consist", {"train": "6V30", "order": ["tank x20", "box x5"]}, RAIL_ERR),
             OK("submit_consist", {"train": "6V30", "order": ["box x1", "tank x20", "box x4"]}, {"accepted": True}),
             R("Accepted once an empty box wagon sat between the loco and the first tank: flammable tanks can't be coupled directly "
               "to the locomotive.")),
      ],
      [
          "Consist validation failed for the diesel tanks on 6M57, and the train is only 400 m",
          "submit 6B33, 18 petrol tank wagons, loco on the front, 2 empty ferry vans at the back",
          "Consist validation failed: 300 m train, fuel tanks straight behind the loco",
          "The Robeston oil train is short this week, only 16 tanks of kerosene and two empty wagons, well under any length limit. "
          "Submission fails with 'Consist validation failed'. We marshalled it as usual with the tanks first. Any ideas before the path expires at 03:00?",
      ]),
    F("waste-item-limit", "waste collection", WASTE_TOOLS, "waste-fridge", "operation",
      "book_bulky_pickup takes at most 3 items per booking; for more, make several bookings of 3 items or fewer (same date or "
      "the next dates).",
      ["3 items", "several bookings", "per booking"],
      [
          TX("fail-fix-reasoned+generic-error", "Book a bulky collection at 14 Hawthorn Close: sofa, armchair, mattress, bed frame, wardrobe", "success",
             U("Book a bulky collection at 14 Hawthorn Close: sofa, armchair, mattress, bed frame, wardrobe"),
             OK("get_address", {"address": "14 Hawthorn Close"}, {"uprn": "100023441", "zone": "B"}),
             OK("list_collection_dates", {"zone": "B"}, {"dates": ["2026-11-18", "2026-11-25"]}),
             E("book_bulky_pickup", {"uprn": "100023441", "date": "2026-11-18", "items": ["sofa", "armchair", "mattress", "bed frame", "wardrobe"]}, WASTE_ERR),
             R("Nothing on the list needs special handling; a collection booking holds at most 3 items. Two bookings: 3 + 2."),
             OK("book_bulky_pickup", {"uprn": "100023441", "date": "2026-11-18", "items": ["sofa", "armchair", "mattress"]}, {"booking": "BK-40110"}),
             OK("book_bulky_pickup", {"uprn": "100023441", "date": "2026-11-18", "items": ["bed frame", "wardrobe"]}, {"booking": "BK-40111"})),
          TX("asks-user+explain-after", "collect 2 sofas, a dining table, 4 chairs and a rug from 7 Mill Lane", "success",
             U("collect 2 sofas, a dining table, 4 chairs and a rug from 7 Mill Lane"),
             OK("get_address", {"address": "7 Mill Lane"}, {"uprn": "100023980", "zone": "A"}),
             E("book_bulky_pickup", {"uprn": "100023980", "date": "2026-11-20",
                                     "items": ["sofa", "sofa", "dining table", "chair", "chair", "chair", "chair", "rug"]}, WASTE_ERR),
             R("This has to go in as more than one collection. Shall they all come on the 20th, or spread over two weeks?"),
             U("all on the same day please, I'm moving out on the 21st"),
             OK("book_bulky_pickup", {"uprn": "100023980", "date": "2026-11-20", "items": ["sofa", "sofa", "dining table"]}, {"booking": "BK-40150"}),
             OK("book_bulky_pickup", {"uprn": "100023980", "date": "2026-11-20", "items": ["chair", "chair", "chair"]}, {"booking": "BK-40151"}),
             OK("book_bulky_pickup", {"uprn": "100023980", "date": "2026-11-20", "items": ["chair", "rug"]}, {"booking": "BK-40152"}),
             R("Accepted once each booking held no more than 3 items; all three come on the 20th.")),
          TX("fail-feedback+generic-error", "book a collection at 3 Elm Terrace: sofa, two chairs, table, standard lamp", "failure",
             U("book a collection at 3 Elm Terrace: sofa, two chairs, table, standard lamp"),
             E("book_bulky_pickup", {"uprn": "100025002", "date": "2026-11-18", "items": ["sofa", "chair", "chair", "table", "standard lamp"]}, WASTE_ERR),
             FB("three things max on one booking. should have been two bookings", "negative")),
      ],
      [
          "Booking not accepted for a house clearance at 9 Oak Rise, seven pieces of furniture",
          "book collection of a bed, two bedside tables, a desk and a bookcase from flat 3, 22 King St",
          "Booking not accepted: sofa, 2 armchairs, coffee table, TV stand. No fridges or anything like that.",
          "My mum's moving into a care home and we need to get rid of most of her furniture from 41 Station Road: wardrobe, chest of "
          "drawers, bed, two armchairs and a sideboard. I tried to book it on your website and it just said booking not accepted. Could you help?",
      ]),
    F("waste-fridge", "waste collection", WASTE_TOOLS, "waste-item-limit", "operation",
      "Fridges, freezers and other cooling appliances go on a separate round: book_bulky_pickup with category 'refrigerant' (WEEE) on "
      "a date list_collection_dates gives for that category, not with the furniture.",
      ["refrigerant", "weee", "appliance collection"],
      [
          TX("wrong-alt+fail-fix-reasoned", "Collect an old fridge-freezer from 5 Birch Way", "success",
             U("Collect an old fridge-freezer from 5 Birch Way"),
             OK("get_address", {"address": "5 Birch Way"}, {"uprn": "100024007", "zone": "B"}),
             E("book_bulky_pickup", {"uprn": "100024007", "date": "2026-11-18", "items": ["fridge-freezer"]}, WASTE_ERR),
             R("Maybe the 18th is full; try the next date."),
             E("book_bulky_pickup", {"uprn": "100024007", "date": "2026-11-25", "items": ["fridge-freezer"]}, WASTE_ERR),
             R("Not the date. Fridges contain refrigerant gas and are collected on their own round."),
             OK("list_collection_dates", {"zone": "B", "category": "refrigerant"}, {"dates": ["2026-11-20", "2026-12-04"]}),
             OK("book_bulky_pickup", {"uprn": "100024007", "date": "2026-11-20", "items": ["fridge-freezer"], "category": "refrigerant"},
                {"booking": "BK-40200"})),
          TX("long-noisy+fail-fix-silent", "Clear the garage at 2 Quarry Lane (chest freezer, sofa, wine cooler, exercise bike) and cancel duplicate BK-40018", "partial",
             U("Clear the garage at 2 Quarry Lane: chest freezer, sofa, wine cooler, exercise bike. And cancel the booking I made last week "
               "(BK-40018), it's a duplicate."),
             OK("cancel_booking", {"booking": "BK-40018"}, {"cancelled": True}),
             OK("get_address", {"address": "2 Quarry Lane"}, {"uprn": "100024551", "zone": "C"}),
             OK("list_collection_dates", {"zone": "C"}, {"dates": ["2026-11-19"]}),
             E("book_bulky_pickup", {"uprn": "100024551", "date": "2026-11-19", "items": ["chest freezer", "sofa", "wine cooler"]}, WASTE_ERR),
             OK("list_collection_dates", {"zone": "C", "category": "refrigerant"}, {"dates": ["2026-11-27"]}),
             OK("book_bulky_pickup", {"uprn": "100024551", "date": "2026-11-27", "items": ["chest freezer", "wine cooler"], "category": "refrigerant"},
                {"booking": "BK-40260"}),
             OK("book_bulky_pickup", {"uprn": "100024551", "date": "2026-11-19", "items": ["sofa", "exercise bike"]}, {"booking": "BK-40261"}),
             S("resident_request", "one visit wanted; split over 19 and 27 November"),
             FB("Two visits instead of one, but at least it's booked.", "negative")),
      ],
      [
          "Booking not accepted for a single chest freezer at 18 Cedar Court",
          "pick up a broken mini fridge from the student flat at 4B College Row",
          "Booking not accepted: one item only, an American-style fridge, plenty of dates free",
          "Hi, we had a new kitchen fitted and the old under-counter freezer and the drinks cooler from the bar are sitting on the drive "
          "at 30 Meadow Road. Just two items, well under any limit. The online booking keeps failing and I can't see why. Can you book them in?",
      ]),
    F("elec-candidate-conflict", "elections", POLL_TOOLS, "elec-training-expired", "operation",
      "A poll worker with a declared link to a candidate (relative, agent, canvasser) may not staff a station in that candidate's "
      "ward: assign them to a station in a different ward (list_stations exclude_ward).",
      ["different ward", "outside the ward", "conflict of interest"],
      [
          TX("fail-fix-reasoned+value-from-result", "Put Helen Marsh as presiding officer at St Jude's Hall (Northgate ward)", "success",
             U("Put Helen Marsh as presiding officer at St Jude's Hall (Northgate ward)"),
             OK("get_worker", {"worker": "W-3301"}, {"name": "Helen Marsh", "training_completed": "2026-09-12", "declared_interests": ["spouse: Tom Marsh"]}),
             E("assign_poll_worker", {"worker": "W-3301", "station": "ST-JUDE", "role": "presiding_officer"}, POLL_ERR),
             OK("get_candidates", {"ward": "Northgate"}, {"candidates": ["Tom Marsh (Independent)", "A. Singh (Labour)"]}),
             R("Her training is current. Her husband is standing in Northgate, and staff can't work in a ward where a relative is on the ballot."),
             OK("list_stations", {"exclude_ward": "Northgate", "vacancy": "presiding_officer"}, {"stations": [{"station": "ELM-PS", "ward": "Eastfield"}]}),
             OK("assign_poll_worker", {"worker": "W-3301", "station": "ELM-PS", "role": "presiding_officer"}, {"assigned": True})),
          TX("wrong-alt+user-corrects+note-user-words", "assign Raj Patel (W-3340) as poll clerk at Riverside Library", "success",
             U("assign Raj Patel (W-3340) as poll clerk at Riverside Library"),
             E("assign_poll_worker", {"worker": "W-3340", "station": "RIV-LIB", "role": "poll_clerk"}, POLL_ERR),
             R("Perhaps his training lapsed; booking him on a session."),
             OK("book_training", {"worker": "W-3340", "session": "PC-2026-11-19"}, {"booking": "TRN-8802"}),
             E("assign_poll_worker", {"worker": "W-3340", "station": "RIV-LIB", "role": "poll_clerk"}, POLL_ERR),
             U("His training's fine, cancel that. Raj is the election agent for one of the Riverside candidates, he can't work a station "
               "in his own ward. Put him somewhere in Hillcrest."),
             OK("assign_poll_worker", {"worker": "W-3340", "station": "HILL-CC", "role": "poll_clerk"}, {"assigned": True})),
      ],
      [
          "Assignment not permitted for a poll clerk whose daughter is standing for the council in that ward",
          "put Gareth Owen at Castle Primary polling station; he's been canvassing for the Greens there",
          "Assignment not permitted: presiding officer trained in September, station is in Southbank where her brother is on the ballot",
          "One of our most reliable volunteers, Maureen, wants to work at her local polling station in Kingsmead like every year. This "
          "year her son-in-law has put himself up as a candidate for Kingsmead. The system won't let me assign her. What's the right "
          "thing to do so we don't lose her?",
      ]),
    F("elec-training-expired", "elections", POLL_TOOLS, "elec-candidate-conflict", "operation",
      "Presiding officers need training completed within the last 12 months (get_worker training_completed); when it is older, "
      "book_training on a refresher session before polling day, then assign with the training booking ref.",
      ["refresher", "book_training", "training session"],
      [
          TX("fail-fix-silent+value-from-result+why-in-result+no-note", "Make Doreen Ellis (W-3012) presiding officer at Westbrook Community Centre", "success",
             U("Make Doreen Ellis (W-3012) presiding officer at Westbrook Community Centre"),
             OK("get_worker", {"worker": "W-3012"}, {"name": "Doreen Ellis", "training_completed": "2024-04-30", "declared_interests": []}),
             E("assign_poll_worker", {"worker": "W-3012", "station": "WEST-CC", "role": "presiding_officer"}, POLL_ERR),
             OK("book_training", {"worker": "W-3012", "session": "PO-REFRESH-2026-11-20"}, {"booking": "TRN-8841"}),
             OK("assign_poll_worker", {"worker": "W-3012", "station": "WEST-CC", "role": "presiding_officer", "training_ref": "TRN-8841"},
                {"assigned": True, "condition": "attend TRN-8841"})),
          TX("blind-retries+note-rambling", "PO at Moor Lane Scout Hut: Alan Fry", "failure",
             U("PO at Moor Lane Scout Hut: Alan Fry"),
             E("assign_poll_worker", {"worker": "W-2987", "station": "MOOR-SH", "role": "presiding_officer"}, POLL_ERR),
             E("assign_poll_worker", {"worker": "W-2987", "station": "MOOR-SH", "role": "presiding_officer"}, POLL_ERR),
             E("assign_poll_worker", {"worker": "W-2987", "station": "MOOR-SH", "role": "presiding_officer"}, POLL_ERR),
             FB("Alan's lovely and he's done Moor Lane for years, but the last time he went on the course was the year of the by-election, "
                "so two years back now, and presiding officers have to have done it within the year. We had exactly this with three people "
                "last May. Book him on a refresher and then he can go in, there's one on the 20th.", "negative")),
      ],
      [
          "Assignment not permitted: presiding officer at Hollins Hall, no relatives standing, last course was spring 2024",
          "make Bernard Cole PO at the Oakfield station, he's done it 15 years but not since the last general election",
          "can't get our veteran PO Margaret into the Kingsway booth, her last course was in 2023",
          "We want Sunita Rao as presiding officer at Larch Road again. She's brilliant and has no links to any candidate, but she "
          "missed the course last year because of her operation. The system says assignment not permitted. Polling day is the 4th. How do we get her on?",
      ]),
]
