"""blind4 part 1: telecom number porting, banking KYC, airline crew, broadcast traffic, courts."""
from dsl import E, F, FB, OK, R, S, TX, U

PORT_TOOLS = ["lookup_number", "port_number", "get_port_status", "message_customer"]
PORT_ERR = "Port request rejected: subscriber details mismatch (code 6F)"

KYC_TOOLS = ["get_customer", "scan_document", "submit_kyc", "request_document"]
KYC_ERR = "KYC check returned REFER: document could not be verified"

CREW_TOOLS = ["get_flight", "list_available_crew", "get_crew_rest", "assign_crew", "notify_crew",
              "check_catering", "book_crew_hotel"]
CREW_ERR = "Assignment blocked: legality check failed (FTL-2)"

SPOT_TOOLS = ["get_spot", "get_break", "list_breaks", "schedule_spot"]
SPOT_ERR = "Spot rejected by playout: 409 Conflict"

COURT_TOOLS = ["get_case", "book_hearing", "request_interpreter", "list_courtrooms"]
COURT_ERR = "Hearing could not be listed"

FAMILIES = [
    F("telecom-port-pin", "telecom", PORT_TOOLS, "telecom-port-business", "operation",
      "Before submitting a personal mobile number port, ask the customer for the port-out PIN (transfer PIN) "
      "the losing carrier issues on request and send it with the account number; name and account alone are "
      "rejected as 'subscriber details mismatch'.",
      ["port-out pin", "transfer pin"],
      [
          TX("fail-fix-reasoned+asks-user", "Move 07700 900412 over to us from Brightwave, customer Dana Okafor, account BW-5531207", "success",
             U("Move 07700 900412 over to us from Brightwave, customer is Dana Okafor, account BW-5531207."),
             OK("lookup_number", {"msisdn": "+447700900412"},
                {"current_carrier": "Brightwave Mobile", "line_type": "mobile_prepay", "portable": True}),
             E("port_number", {"msisdn": "+447700900412", "donor": "Brightwave Mobile", "account_number": "BW-5531207",
                               "name": "Dana Okafor"}, PORT_ERR),
             R("Name and account are what the customer gave us. Brightwave validates mobile ports against a port-out PIN "
               "it issues to the customer on request; I sent none, so the donor reports a mismatch. I need that PIN from her."),
             OK("message_customer", {"to": "Dana Okafor", "text": "Please text PIN to 65075 from your Brightwave phone and send us the 6-digit code you get back."},
                {"sent": True, "reply": "It's 448120"}),
             OK("port_number", {"msisdn": "+447700900412", "donor": "Brightwave Mobile", "account_number": "BW-5531207",
                                "name": "Dana Okafor", "port_out_pin": "448120"},
                {"port_id": "PT-88213", "status": "submitted", "scheduled": "2026-11-04T06:00:00Z"}),
             OK("get_port_status", {"port_id": "PT-88213"}, {"status": "accepted_by_donor"})),
          TX("blind-retries+note-user-words", "port +447700900877 from Kestrel Tel, account KT-0098812, holder Sam Reyes", "failure",
             U("port +447700900877 from Kestrel Tel, account KT-0098812, holder Sam Reyes"),
             OK("lookup_number", {"msisdn": "+447700900877"},
                {"current_carrier": "Kestrel Tel", "line_type": "mobile_postpay", "portable": True}),
             E("port_number", {"msisdn": "+447700900877", "donor": "Kestrel Tel", "account_number": "KT-0098812", "name": "Sam Reyes"}, PORT_ERR),
             E("port_number", {"msisdn": "+447700900877", "donor": "Kestrel Tel", "account_number": "KT-0098812", "name": "Sam Reyes"}, PORT_ERR),
             E("port_number", {"msisdn": "+447700900877", "donor": "Kestrel Tel", "account_number": "KT-0098812", "name": "Sam Reyes"}, PORT_ERR),
             FB("you just kept sending the same thing. the old network wants the code Sam gets from them when he texts PIN to their "
                "short number, the transfer PIN. ask him for it before you submit, a name and account never go through on their own", "negative")),
      ],
      [
          "Port-in for 07700 900315 from Brightwave keeps bouncing with code 6F",
          "Customer Priya Nand wants to keep her mobile number +447700900651 when she switches from Kestrel Tel to us, "
          "account KT-7781002, can you get that moving? She'd like it done today ideally, she already paid the first month.",
          "Port request rejected: subscriber details mismatch (code 6F) on a personal mobile; name and account match the bill exactly",
          "bring over a pay-as-you-go number from another network for a new customer",
      ]),
    F("telecom-port-business", "telecom", PORT_TOOLS, "telecom-port-pin", "operation",
      "For a number on a company account, submit the port with the registered business name exactly as on the donor's bill "
      "(the account holder, e.g. 'Marsh & Daughters Joinery Ltd'), not the name of the employee who uses or ordered the line.",
      ["business name", "registered company name", "account holder name"],
      [
          TX("wrong-alt+fail-fix-reasoned", "Port 020 7946 0332 from Kestrel Tel for Joe Marsh at Marsh & Daughters Joinery, account KT-B-22190", "success",
             U("Port 020 7946 0332 from Kestrel Tel for Joe Marsh at Marsh & Daughters Joinery, account KT-B-22190"),
             OK("lookup_number", {"msisdn": "+442079460332"},
                {"current_carrier": "Kestrel Tel", "line_type": "business_fixed", "account_type": "business", "portable": True}),
             E("port_number", {"msisdn": "+442079460332", "donor": "Kestrel Tel", "account_number": "KT-B-22190", "name": "Joe Marsh"}, PORT_ERR),
             R("Perhaps the donor wants a transfer PIN, as for mobiles. Asking Joe to request one."),
             OK("message_customer", {"to": "Joe Marsh", "text": "Could you ask Kestrel Tel for a transfer PIN for 020 7946 0332?"},
                {"sent": True, "reply": "Kestrel say fixed business lines don't get one. The bill is in the company's name, Marsh & Daughters Joinery Ltd."}),
             R("So the donor matches the name against its account holder, which is the company, not Joe."),
             OK("port_number", {"msisdn": "+442079460332", "donor": "Kestrel Tel", "account_number": "KT-B-22190",
                                "name": "Marsh & Daughters Joinery Ltd"},
                {"port_id": "PT-88390", "status": "submitted"})),
          TX("rule-first+note-terse", "Switch the two lines of Harrow Vale Dental Ltd from Brightwave, contact Dr Ana Ruiz, account BWB-40021", "success",
             U("Switch the two lines of Harrow Vale Dental Ltd (01632 960118, 01632 960119) from Brightwave, contact Dr Ana Ruiz, account BWB-40021"),
             OK("lookup_number", {"msisdn": "+441632960118"},
                {"current_carrier": "Brightwave Mobile", "line_type": "business_fixed", "account_type": "business"}),
             R("Business account: the donor checks the company name on its bill, not the contact's. Using 'Harrow Vale Dental Ltd'."),
             OK("port_number", {"msisdn": "+441632960118", "donor": "Brightwave Mobile", "account_number": "BWB-40021",
                                "name": "Harrow Vale Dental Ltd"}, {"port_id": "PT-88402", "status": "submitted"}),
             OK("port_number", {"msisdn": "+441632960119", "donor": "Brightwave Mobile", "account_number": "BWB-40021",
                                "name": "Harrow Vale Dental Ltd"}, {"port_id": "PT-88403", "status": "submitted"})),
      ],
      [
          "port request for the office landline keeps failing with code 6F, we put the manager's name on it",
          "Bring over 01632 960774 from Brightwave; it's the reception line of Corran Bakery, Hamid runs the place",
          "Port request rejected: subscriber details mismatch (code 6F). The number belongs to the shop; the owner's own name is on the form.",
          "Hi, we're a small architecture practice, four of us, and we want to move our main number over to you from Kestrel. "
          "I filled in the form with my own name since I'm the one who set it up years ago, and account KT-B-55012, but it got bounced twice. Can you sort it?",
      ]),
    F("kyc-expired-document", "banking KYC", KYC_TOOLS, "kyc-mrz-name", "operation",
      "When the scanned ID's expiry date has passed, do not resubmit or rescan it: ask the customer for an unexpired identity "
      "document (another passport or a driving licence), scan that one and submit KYC with it.",
      ["unexpired", "another identity document", "driving licence"],
      [
          TX("fail-fix-silent+why-in-result+no-note", "Open a current account for Tomasz Wrona, passport uploaded", "success",
             U("Open a current account for Tomasz Wrona (C-30018), passport uploaded as upl_7731.jpg."),
             OK("scan_document", {"file": "upl_7731.jpg"},
                {"doc_type": "passport", "expiry_date": "2025-03-14", "checks": {"expired": True, "image_quality": "good"}}),
             E("submit_kyc", {"customer_id": "C-30018", "document_ref": "upl_7731.jpg"}, KYC_ERR),
             OK("request_document", {"customer_id": "C-30018", "kind": "identity",
                                     "message": "Please upload an unexpired passport or driving licence."},
                {"uploaded": "upl_7790.jpg"}),
             OK("scan_document", {"file": "upl_7790.jpg"},
                {"doc_type": "driving_licence", "expiry_date": "2031-08-02", "checks": {"expired": False, "image_quality": "good"}}),
             OK("submit_kyc", {"customer_id": "C-30018", "document_ref": "upl_7790.jpg"}, {"result": "PASS"})),
          TX("wrong-alt+user-corrects+note-rambling", "KYC for new customer Ines Carvalho, C-30544, her ID is upl_8012.png", "success",
             U("KYC for new customer Ines Carvalho, C-30544, her ID is upl_8012.png"),
             OK("scan_document", {"file": "upl_8012.png"},
                {"doc_type": "passport", "expiry_date": "2026-09-30", "checks": {"expired": True, "image_quality": "fair"}}),
             E("submit_kyc", {"customer_id": "C-30544", "document_ref": "upl_8012.png"}, KYC_ERR),
             R("Image quality is only fair; rescanning at high resolution."),
             E("submit_kyc", {"customer_id": "C-30544", "document_ref": "upl_8012.png", "rescan": "high_resolution"}, KYC_ERR),
             U("Stop resubmitting that one. Look at the date on the scan, it ran out at the end of September. The provider refers "
               "anything past its date no matter how sharp the photo is, it's been like that since they changed vendors in the spring and "
               "honestly it catches somebody every other week, usually on a Friday. Just ask her for something current, a driving licence is fine."),
             OK("request_document", {"customer_id": "C-30544", "kind": "identity", "message": "Could you upload a current driving licence or passport?"},
                {"uploaded": "upl_8090.jpg"}),
             OK("scan_document", {"file": "upl_8090.jpg"},
                {"doc_type": "driving_licence", "expiry_date": "2033-01-19", "checks": {"expired": False}}),
             OK("submit_kyc", {"customer_id": "C-30544", "document_ref": "upl_8090.jpg"}, {"result": "PASS"})),
      ],
      [
          "KYC REFER for customer C-31207, his passport was issued in 2015",
          "onboarding Mr Adeyemi, his ID card ran out in June but he says the renewal is still in the post",
          "KYC check returned REFER: document could not be verified. Photo is sharp, name matches, but the document's end date is last year.",
          "Please finish the identity check for the new savings customer C-31888. He uploaded his old passport because the new one is "
          "with the visa office, the check just says refer and I don't know what else to do, the branch wants the account open by Friday so his salary can go in.",
      ]),
    F("kyc-mrz-name", "banking KYC", KYC_TOOLS, "kyc-expired-document", "operation",
      "Submit the customer's name exactly as the document's machine-readable zone spells it (the scan's mrz_name: MUELLER for "
      "Müller, a Latin transliteration for Cyrillic), not the name as typed on the application form.",
      ["mrz", "machine-readable"],
      [
          TX("fail-fix-reasoned+value-from-result", "Verify Jürgen Müller-Støa, customer C-30201, passport upl_7802.jpg", "success",
             U("Verify Jürgen Müller-Støa, customer C-30201, passport upl_7802.jpg"),
             OK("get_customer", {"customer_id": "C-30201"}, {"name": "Jürgen Müller-Støa", "dob": "1979-02-11", "nationality": "NO"}),
             OK("scan_document", {"file": "upl_7802.jpg"},
                {"doc_type": "passport", "mrz_name": "MUELLER<STOA<<JUERGEN", "expiry_date": "2030-06-01", "checks": {"expired": False}}),
             E("submit_kyc", {"customer_id": "C-30201", "document_ref": "upl_7802.jpg", "full_name": "Jürgen Müller-Støa"}, KYC_ERR),
             R("The document is in date. The verifier compares full_name with the MRZ, where ü and ø are transliterated "
               "(MUELLER STOA JUERGEN). Send the name in that form."),
             OK("submit_kyc", {"customer_id": "C-30201", "document_ref": "upl_7802.jpg", "full_name": "Juergen Mueller-Stoa"},
                {"result": "PASS"})),
          TX("explain-after+value-from-result", "KYC for Олена Ковальчук (C-30650), ID card upl_8101", "success",
             U("KYC for Олена Ковальчук (C-30650), ID card upl_8101"),
             OK("scan_document", {"file": "upl_8101"},
                {"doc_type": "id_card", "mrz_name": "KOVALCHUK<<OLENA", "expiry_date": "2029-04-11", "checks": {"expired": False}}),
             E("submit_kyc", {"customer_id": "C-30650", "document_ref": "upl_8101", "full_name": "Олена Ковальчук"}, KYC_ERR),
             OK("submit_kyc", {"customer_id": "C-30650", "document_ref": "upl_8101", "full_name": "Olena Kovalchuk"}, {"result": "PASS"}),
             R("It passed once full_name matched the MRZ transliteration from the scan (KOVALCHUK, OLENA) instead of the Cyrillic "
               "spelling from the application.")),
      ],
      [
          "KYC check returned REFER: document could not be verified for Zoë Brontë-Ødegaard, passport valid to 2031",
          "identity check keeps referring for a customer whose surname has an umlaut",
          "Can you finish onboarding for Дмитрий Соколов (C-31450)? He uploaded his passport, it's good until 2032, and the form "
          "has his name in Russian the way he wrote it. The check just says refer.",
          "REFER on KYC, Irish customer Seán Ó Briain, licence good till 2029",
      ]),
    F("crew-rest-period", "airline crew", CREW_TOOLS, "crew-type-rating", "operation",
      "Before assigning a standby or reserve crew member, call get_crew_rest and pick someone whose minimum rest ends before the "
      "flight's report time; a crew member who landed late the night before fails the FTL-2 legality check.",
      ["rest ends", "minimum rest", "get_crew_rest"],
      [
          TX("fail-fix-reasoned+value-from-result", "Cover FO on AX412 LHR-OSL tomorrow 06:40, Ravi is sick", "success",
             U("Cover FO on AX412 LHR-OSL tomorrow 06:40, Ravi is sick."),
             OK("get_flight", {"flight": "AX412", "date": "2026-11-12"},
                {"dep_utc": "06:40", "report_utc": "05:40", "aircraft": "A320", "vacancy": "FO"}),
             OK("list_available_crew", {"rank": "FO", "base": "LHR", "date": "2026-11-12"},
                {"crew": [{"id": "FO-2231", "name": "K. Lind", "ratings": ["A320"]}, {"id": "FO-1187", "name": "M. Osei", "ratings": ["A320"]}]}),
             E("assign_crew", {"flight": "AX412", "date": "2026-11-12", "crew_id": "FO-2231"}, CREW_ERR),
             R("Lind holds the A320 rating, so FTL-2 is about rest. Check when each candidate's rest ends."),
             OK("get_crew_rest", {"crew_id": "FO-2231"},
                {"last_on_blocks_utc": "2026-11-11T23:10", "min_rest_h": 12, "rest_ends_utc": "2026-11-12T11:10"}),
             OK("get_crew_rest", {"crew_id": "FO-1187"},
                {"last_on_blocks_utc": "2026-11-11T07:00", "min_rest_h": 12, "rest_ends_utc": "2026-11-11T19:00"}),
             OK("assign_crew", {"flight": "AX412", "date": "2026-11-12", "crew_id": "FO-1187"}, {"assigned": True}),
             OK("notify_crew", {"crew_id": "FO-1187", "text": "You are on AX412 06:40 LHR-OSL, report 05:40."}, {"sent": True})),
          TX("rule-first+note-terse", "Need a cabin crew for AX77 at 07:15 Gatwick off the standby list", "success",
             U("Need a CC for AX77 at 07:15 Gatwick, take someone off standby"),
             OK("get_flight", {"flight": "AX77", "date": "2026-11-20"}, {"dep_utc": "07:15", "report_utc": "06:15", "aircraft": "A320"}),
             OK("list_available_crew", {"rank": "CC", "base": "LGW", "date": "2026-11-20"},
                {"crew": [{"id": "CC-5120", "ratings": ["A320"]}, {"id": "CC-4471", "ratings": ["A320"]}]}),
             R("Standby doesn't mean rested: check that the 12h rest is over by report time before assigning."),
             OK("get_crew_rest", {"crew_id": "CC-5120"}, {"rest_ends_utc": "2026-11-20T09:30"}),
             OK("get_crew_rest", {"crew_id": "CC-4471"}, {"rest_ends_utc": "2026-11-19T22:00"}),
             OK("assign_crew", {"flight": "AX77", "date": "2026-11-20", "crew_id": "CC-4471"}, {"assigned": True})),
      ],
      [
          "FTL-2 when putting a reserve captain on the 06:05 Dublin",
          "Sofia flew the late Palma back last night, can she take the first Oslo this morning? The system won't let me assign her.",
          "Assignment blocked: legality check failed (FTL-2). She's rated on the type; it's the first wave departure.",
          "Hi, ops here, we're short a purser for AX230 at 06:30 and I keep trying people off the standby list but the assignment keeps "
          "getting blocked. Half of them did the Tenerife night flight. What should I be doing differently so I can fill it before briefing?",
      ]),
    F("crew-type-rating", "airline crew", CREW_TOOLS, "crew-rest-period", "operation",
      "After an aircraft swap, read the flight's current aircraft type from get_flight and assign only crew holding a type rating "
      "for it (e.g. E190, A321neo); a crew member rated only on the originally planned type fails the FTL-2 legality check.",
      ["type rating", "aircraft swap", "equipment change"],
      [
          TX("long-noisy+wrong-alt+fail-fix-reasoned", "AX509 to Faro needs a second FO; also check catering and the Faro crew hotel", "success",
             U("AX509 to Faro needs a second FO, also can you check catering for AX509 is updated and the crew hotel in Faro is booked"),
             OK("get_flight", {"flight": "AX509", "date": "2026-11-14"},
                {"dep_utc": "09:05", "aircraft": "E190", "note": "A320 replaced by E190 at 03:12 (tech)", "vacancy": "FO"}),
             OK("check_catering", {"flight": "AX509", "date": "2026-11-14"}, {"status": "updated", "meals": 100}),
             OK("book_crew_hotel", {"city": "FAO", "nights": 1, "rooms": 4}, {"confirmation": "HT-22914"}),
             OK("list_available_crew", {"rank": "FO", "base": "LHR", "date": "2026-11-14"},
                {"crew": [{"id": "FO-3310", "name": "D. Patel", "ratings": ["A320"]}, {"id": "FO-4021", "name": "E. Brun", "ratings": ["E190"]}]}),
             E("assign_crew", {"flight": "AX509", "date": "2026-11-14", "crew_id": "FO-3310"}, CREW_ERR),
             OK("get_crew_rest", {"crew_id": "FO-3310"}, {"rest_ends_utc": "2026-11-13T18:00"}),
             R("Rest is fine. The flight was swapped to an E190 overnight and Patel is rated on the A320 only; the legality check "
               "covers the type too."),
             OK("assign_crew", {"flight": "AX509", "date": "2026-11-14", "crew_id": "FO-4021"}, {"assigned": True}),
             OK("notify_crew", {"crew_id": "FO-4021", "text": "AX509 09:05 to Faro, E190."}, {"sent": True})),
          TX("user-corrects+note-user-words", "Fill the captain slot on AX118, use Dahl", "success",
             U("Fill the captain slot on AX118, use Dahl"),
             OK("get_flight", {"flight": "AX118", "date": "2026-11-16"}, {"dep_utc": "12:40", "aircraft": "A321neo", "planned_aircraft": "A320"}),
             E("assign_crew", {"flight": "AX118", "date": "2026-11-16", "crew_id": "CP-0912"}, CREW_ERR),
             U("oh they put the neo on it this morning, Dahl's only got the A320 on his licence. pick someone who has the neo"),
             OK("list_available_crew", {"rank": "CP", "base": "LHR", "date": "2026-11-16", "rating": "A321neo"},
                {"crew": [{"id": "CP-0450", "name": "H. Sato", "ratings": ["A320", "A321neo"]}]}),
             OK("assign_crew", {"flight": "AX118", "date": "2026-11-16", "crew_id": "CP-0450"}, {"assigned": True})),
      ],
      [
          "FTL-2 blocking the reserve FO on AX640, she's had 3 days off",
          "maintenance put a different plane on the Split rotation and now nobody from standby sticks",
          "Assignment blocked: legality check failed (FTL-2). He's been off since Tuesday, fully fresh.",
          "We had a tech issue on the morning jet so ops brought out the E-jet instead for the Billund turn, and now when I try to put Carla "
          "on it as captain the tool says no. She's had two full days off, so it can't be her hours. Any idea?",
      ]),
    F("broadcast-watershed", "broadcast traffic", SPOT_TOOLS, "broadcast-category-clash", "operation",
      "Spots cleared as alcohol, betting/gambling or 15+ (get_spot's clearance) may only go into breaks starting at or after "
      "21:00; put them in a break after the 21:00 watershed instead of the requested early-evening one.",
      ["watershed", "after 21:00", "post-21:00"],
      [
          TX("fail-fix-silent+why-in-result", "Put the Copperhill Gin 30s into the 19:45 break on 5North Thursday", "success",
             U("Put the Copperhill Gin 30s into the 19:45 break on 5North Thursday"),
             E("schedule_spot", {"channel": "5N", "break_id": "BRK-1945-THU", "spot_id": "SP-77812"}, SPOT_ERR),
             OK("get_spot", {"spot_id": "SP-77812"}, {"advertiser": "Copperhill Distillers", "length_s": 30, "clearance": "ALC - post-watershed only"}),
             OK("list_breaks", {"channel": "5N", "day": "THU", "from": "21:00"},
                {"breaks": [{"break_id": "BRK-2112-THU", "free_s": 60}, {"break_id": "BRK-2148-THU", "free_s": 30}]}),
             OK("schedule_spot", {"channel": "5N", "break_id": "BRK-2112-THU", "spot_id": "SP-77812"}, {"booked": True})),
          TX("blind-retries+note-rambling+generic-error", "Book SP-80221 (Lucky Lane Bingo 20s) into the 18:30 and 20:15 breaks Saturday", "failure",
             U("Book SP-80221 (Lucky Lane Bingo 20s) into the 18:30 and 20:15 breaks Saturday"),
             E("schedule_spot", {"channel": "5N", "break_id": "BRK-1830-SAT", "spot_id": "SP-80221"}, SPOT_ERR),
             E("schedule_spot", {"channel": "5N", "break_id": "BRK-1830-SAT", "spot_id": "SP-80221"}, SPOT_ERR),
             E("schedule_spot", {"channel": "5N", "break_id": "BRK-2015-SAT", "spot_id": "SP-80221"}, SPOT_ERR),
             E("schedule_spot", {"channel": "5N", "break_id": "BRK-2015-SAT", "spot_id": "SP-80221"}, SPOT_ERR),
             FB("None of those were ever going to go. Bingo counts as gambling, and gambling and booze can't air before nine at night, "
                "the playout just throws that useless 409 at you. I spent twenty minutes on the phone with the traffic desk before someone "
                "remembered. Anything from 21:00 onwards is fine, and look at the spot's clearance before you start.", "negative")),
      ],
      [
          "409 Conflict from playout booking a whisky ad into early evening",
          "schedule SP-90155 (PlayRiver Casino 30s) into the 17:50 break on Friday",
          "Spot rejected by playout: 409 Conflict. It's a lager spot for the Sunday 20:30 slot and the break isn't full.",
          "Client wants their online poker ad in the teatime block because that's when dads are home, the system keeps saying conflict, "
          "I checked and the break has loads of room, what's going on and what can I offer them instead?",
      ]),
    F("broadcast-category-clash", "broadcast traffic", SPOT_TOOLS, "broadcast-watershed", "operation",
      "Before booking, read the break's booked spots with get_break and choose a break holding no spot of the same product "
      "category (two car makers, two supermarkets, two banks); playout enforces category separation within a break.",
      ["same product category", "category separation", "competing brand"],
      [
          TX("fail-fix-reasoned+generic-error", "Add the Velmora Motors 30s to the 20:10 break Wednesday on 5N", "success",
             U("Add the Velmora Motors 30s to the 20:10 break Wed on 5N"),
             E("schedule_spot", {"channel": "5N", "break_id": "BRK-2010-WED", "spot_id": "SP-81200"}, SPOT_ERR),
             OK("get_break", {"break_id": "BRK-2010-WED"},
                {"capacity_s": 180, "booked_s": 90, "spots": [{"advertiser": "Ostrava Auto", "category": "AUTOMOTIVE"},
                                                              {"advertiser": "FreshWay", "category": "GROCERY"}]}),
             R("There is room. Ostrava Auto is already in this break and Velmora is AUTOMOTIVE too; two car brands can't share a break."),
             OK("get_break", {"break_id": "BRK-2042-WED"},
                {"capacity_s": 150, "booked_s": 60, "spots": [{"advertiser": "Lumen Bank", "category": "FINANCE"}]}),
             OK("schedule_spot", {"channel": "5N", "break_id": "BRK-2042-WED", "spot_id": "SP-81200"}, {"booked": True})),
          TX("wrong-alt+explain-after", "Book SP-81544 (Greenbasket supermarket) into the 22:05 and 22:40 Saturday breaks", "partial",
             U("Book SP-81544 (Greenbasket supermarket) into the 22:05 and 22:40 Saturday breaks"),
             OK("schedule_spot", {"channel": "5N", "break_id": "BRK-2205-SAT", "spot_id": "SP-81544"}, {"booked": True}),
             E("schedule_spot", {"channel": "5N", "break_id": "BRK-2240-SAT", "spot_id": "SP-81544"}, SPOT_ERR),
             E("schedule_spot", {"channel": "5N", "break_id": "BRK-2240-SAT", "spot_id": "SP-81544-10S"}, SPOT_ERR),
             OK("get_break", {"break_id": "BRK-2240-SAT"},
                {"capacity_s": 150, "booked_s": 100, "spots": [{"advertiser": "FreshWay", "category": "GROCERY"}]}),
             OK("schedule_spot", {"channel": "5N", "break_id": "BRK-2255-SAT", "spot_id": "SP-81544"}, {"booked": True}),
             R("The cut-down didn't help: the 22:40 break already carried FreshWay (GROCERY) and playout won't put two grocers in one "
               "break, so the second airing went to 22:55. The client asked for 22:40, so this is only partly what they wanted.")),
      ],
      [
          "409 Conflict booking a bank ad into the 20:50 break; break has 60s free",
          "Spot rejected by playout: 409 Conflict for an insurance spot at 21:35. It's well past nine and there's room.",
          "Get SP-92011 (Nordvik Cars) onto the Monday 22:20 break please, the Halden Motors spot is already in there",
          "Our traffic planner says the pizza delivery spot 'conflicts' in Tuesday's 22:10 break even though half the break is empty and "
          "it's a perfectly ordinary family ad. Pizza Rocket took a slot in that break last week I think. What do I do?",
      ]),
    F("courts-interpreter", "courts", COURT_TOOLS, "courts-custody-video", "operation",
      "When a party needs a language interpreter (get_case shows language_needs, including sign language), call "
      "request_interpreter for that date first and pass its booking ref to book_hearing.",
      ["interpreter"],
      [
          TX("fail-fix-reasoned+value-from-result", "List case 26-CR-0419 for a plea hearing on 14 Jan, courtroom 3", "success",
             U("List case 26-CR-0419 for plea hearing on 14 Jan, courtroom 3"),
             OK("get_case", {"case": "26-CR-0419"},
                {"parties": [{"role": "defendant", "name": "L. Mbeki", "language_needs": "Portuguese", "custody": False}]}),
             E("book_hearing", {"case": "26-CR-0419", "date": "2027-01-14", "courtroom": "3", "type": "plea"}, COURT_ERR),
             R("Listing checks that an interpreter is booked when a party has language_needs. Book a Portuguese interpreter first."),
             OK("request_interpreter", {"case": "26-CR-0419", "date": "2027-01-14", "language": "Portuguese"}, {"ref": "INT-5521"}),
             OK("book_hearing", {"case": "26-CR-0419", "date": "2027-01-14", "courtroom": "3", "type": "plea", "interpreter_ref": "INT-5521"},
                {"listed": True, "time": "10:00"})),
          TX("fail-fix-silent+no-note", "Set a case management hearing for 26-CV-1102 next Tuesday afternoon", "success",
             U("Set a case management hearing for 26-CV-1102 next Tuesday afternoon"),
             OK("get_case", {"case": "26-CV-1102"},
                {"parties": [{"role": "claimant", "name": "P. Hale", "language_needs": "BSL"}, {"role": "defendant", "name": "Oakline Ltd"}]}),
             E("book_hearing", {"case": "26-CV-1102", "date": "2026-11-24", "session": "pm", "type": "cmc"}, COURT_ERR),
             OK("request_interpreter", {"case": "26-CV-1102", "date": "2026-11-24", "language": "BSL"}, {"ref": "INT-5610"}),
             OK("book_hearing", {"case": "26-CV-1102", "date": "2026-11-24", "session": "pm", "type": "cmc", "interpreter_ref": "INT-5610"},
                {"listed": True, "time": "14:00"})),
      ],
      [
          "Hearing could not be listed for 26-CR-0733, the defendant only speaks Tigrinya",
          "list a sentencing hearing for 26-CR-0811, Mr Duarte needs everything said in Spanish",
          "why won't the hearing for the deaf claimant in 26-CV-1400 list?",
          "Can you put 26-FAM-0207 in for a first directions hearing on 9 February? Mum is Polish and her English isn't great, the social "
          "worker said she'll need help following what's said. I tried myself and just got 'could not be listed'.",
      ]),
    F("courts-custody-video", "courts", COURT_TOOLS, "courts-interpreter", "operation",
      "When the defendant is in custody (get_case custody: true), book the hearing with a prison video link (video_link: true and "
      "the prison code from get_case) in a courtroom that has video equipment (list_courtrooms video: true).",
      ["video link", "video_link", "video-enabled"],
      [
          TX("wrong-alt+fail-fix-reasoned", "Book a bail review for 26-CR-0507 on 20 Jan in courtroom 2", "success",
             U("Book a bail review for 26-CR-0507 on 20 Jan in courtroom 2"),
             OK("get_case", {"case": "26-CR-0507"},
                {"parties": [{"role": "defendant", "name": "R. Kowal", "custody": True, "held_at": "HMP Larkmoor (LKM)", "language_needs": None}]}),
             E("book_hearing", {"case": "26-CR-0507", "date": "2027-01-20", "courtroom": "2", "type": "bail"}, COURT_ERR),
             R("No language needs. Maybe courtroom 2 is taken; trying 5."),
             E("book_hearing", {"case": "26-CR-0507", "date": "2027-01-20", "courtroom": "5", "type": "bail"}, COURT_ERR),
             R("Not the room either. He is held at HMP Larkmoor: custody hearings go over the prison video link, which needs a room "
               "with video kit."),
             OK("list_courtrooms", {"date": "2027-01-20", "video": True}, {"courtrooms": ["4", "7"]}),
             OK("book_hearing", {"case": "26-CR-0507", "date": "2027-01-20", "courtroom": "4", "type": "bail", "video_link": True, "prison": "LKM"},
                {"listed": True, "time": "11:30"})),
          TX("user-corrects+note-user-words", "List 26-CR-0622 for plea, 3 Feb, courtroom 1", "success",
             U("List 26-CR-0622 for plea, 3 Feb, courtroom 1"),
             E("book_hearing", {"case": "26-CR-0622", "date": "2027-02-03", "courtroom": "1", "type": "plea"}, COURT_ERR),
             U("He's on remand at Larkmoor, they won't bus him in for a plea. It has to be over the screen from the prison, and room 1 "
               "has no kit. Try 7."),
             OK("book_hearing", {"case": "26-CR-0622", "date": "2027-02-03", "courtroom": "7", "type": "plea", "video_link": True, "prison": "LKM"},
                {"listed": True, "time": "10:15"})),
      ],
      [
          "Hearing could not be listed: defendant remanded at HMP Larkmoor, plea on the 11th",
          "list a mention hearing for 26-CR-0944; he's locked up pending trial",
          "can't get the bail application for the prisoner in 26-CR-0960 into any court",
          "The defendant in 26-CR-1013 was refused bail last week and is sitting in Coldwater prison. I need his plea and trial prep "
          "hearing listed for the first week of March, courtroom 2 if possible, but every time I try it says could not be listed. "
          "There's no language issue, I checked.",
      ]),
]
