// The console works without this file; it adds a copy button, enables the RPM field only for a tier
// whose RPM is chosen at issuance: its <option> carries data-min-rpm and data-max-rpm (from keys.TIERS), and
// sends a form marked data-send-once once.
"use strict";

document.addEventListener("DOMContentLoaded", () => {
  for (const button of document.querySelectorAll("button[data-copy]")) {
    button.addEventListener("click", () => copyKey(button.dataset.copy));
  }
  for (const select of document.querySelectorAll("select[data-rpm-field]")) {
    const rpm = document.getElementById(select.dataset.rpmField);
    if (!rpm) continue;  // no tier takes a chosen RPM
    const sync = () => {
      const range = select.selectedOptions[0].dataset;
      rpm.disabled = !("minRpm" in range);
      if (!rpm.disabled) {
        rpm.min = range.minRpm;
        rpm.max = range.maxRpm;
      }
    };
    select.addEventListener("change", sync);
    sync();
  }
  for (const form of document.querySelectorAll("form[data-send-once]")) {
    // A second click before the answer came sent the form again: the create form created two keys, and the first
    // one's only showing was in the answer the browser dropped for the second's; a status form's second answer, the
    // one shown, said another operator had changed the key. Console pages are no-store, so going back to this page
    // loads it afresh, sendable.
    form.addEventListener("submit", (event) => {
      if (form.dataset.sent) event.preventDefault();
      form.dataset.sent = "yes";
    });
  }
});

async function copyKey(inputId) {
  const input = document.getElementById(inputId);
  const status = document.querySelector(`[data-copy-status="${inputId}"]`);
  try {
    await navigator.clipboard.writeText(input.value);
    status.textContent = "Copied to the clipboard.";
  } catch {
    // The clipboard API needs HTTPS (or localhost): select the key so Ctrl+C / ⌘C copies it.
    input.focus();
    input.select();
    status.textContent = "Selected: press Ctrl+C (⌘C) to copy.";
  }
}
